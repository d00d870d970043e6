"""``conclave import massgen`` carries MCP servers over: a backend's ``mcp_servers`` (a list or
a mapping, stdio or streamable-http) become the agent's, with a note for every field that
changed and every one dropped (config/massgen_mcp.py). The input is written from MassGen's
documented shapes (tests/config_import/massgen/mcp_servers.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.config.loader import load_config
from conclave.config.massgen import Conversion, NoteKind, convert_massgen
from conclave.config.schema.mcp import StdioMcpServer, StreamableHttpMcpServer
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

SOURCE = Path(__file__).parent / "massgen" / "mcp_servers.yaml"


@pytest.fixture(scope="module")
def conversion() -> Conversion:
    return convert_massgen(yaml.safe_load(SOURCE.read_text(encoding="utf-8")))


def _servers(conversion: Conversion, agent: int) -> dict[str, dict[str, Any]]:
    servers = conversion.config["agents"][agent]["mcp_servers"]
    return {s["name"]: s for s in servers}


def _notes(conversion: Conversion, kind: NoteKind) -> dict[str, str]:
    return {n.path: n.message for n in conversion.notes if n.kind is kind}


def test_a_backends_servers_become_the_agents_in_order(conversion: Conversion) -> None:
    assert list(_servers(conversion, 0)) == ["search", "discord", "tracker"]
    assert "mcp_servers" not in conversion.config["agents"][0]["backend"]
    changed = _notes(conversion, NoteKind.CHANGED)
    assert "now the agent's 'mcp_servers'" in changed["agents[0].backend.mcp_servers"]


def test_a_stdio_server_keeps_its_command_args_and_env_as_written(
    conversion: Conversion,
) -> None:
    search = _servers(conversion, 0)["search"]

    assert search["command"] == "npx"
    assert search["args"] == ["-y", "@modelcontextprotocol/server-brave-search"]
    assert search["env"] == {"BRAVE_API_KEY": "${BRAVE_API_KEY}"}
    assert "type" not in search  # stdio is Conclave's default


def test_an_agent_with_stdio_servers_is_told_once_their_environment_is_path_and_env_only(
    conversion: Conversion,
) -> None:
    environment = [n.path for n in conversion.notes if "exactly PATH and its 'env'" in n.message]

    assert environment == ["agents[0].backend.mcp_servers", "agents[1].backend.mcp_servers"]


def test_a_command_string_is_split_into_command_and_args_like_massgen_does(
    conversion: Conversion,
) -> None:
    discord = _servers(conversion, 0)["discord"]

    assert (discord["command"], discord["args"]) == (
        "npx", ["-y", "@modelcontextprotocol/server-discord"],
    )  # fmt: skip
    assert (
        "split" in _notes(conversion, NoteKind.CHANGED)["agents[0].backend.mcp_servers[1].command"]
    )


def test_a_streamable_http_server_keeps_its_url_and_headers_and_timeout_is_call_timeout(
    conversion: Conversion,
) -> None:
    tracker = _servers(conversion, 0)["tracker"]

    assert tracker == {
        "name": "tracker",
        "type": "streamable-http",
        "url": "http://localhost:5173/mcp",
        "headers": {"Authorization": "Bearer ${TRACKER_TOKEN}"},
        "call_timeout": 30,
    }
    changed = _notes(conversion, NoteKind.CHANGED)
    assert "call_timeout" in changed["agents[0].backend.mcp_servers[2].timeout"]


def test_tool_filters_become_allow_and_deny_with_the_servers_own_tool_names(
    conversion: Conversion,
) -> None:
    servers = _servers(conversion, 0)

    assert servers["search"]["tools"] == {"allow": ["web_search", "local_search"]}
    assert servers["discord"]["tools"] == {"deny": ["send_webhook"]}  # the backend's exclude_tools


def test_an_excluded_tool_of_no_carried_server_is_dropped_with_a_note(
    conversion: Conversion,
) -> None:
    dropped = _notes(conversion, NoteKind.DROPPED)

    assert "names no tool of an MCP server" in dropped["agents[0].backend.exclude_tools[1]"]


def test_security_settings_and_an_sse_server_are_dropped_each_with_a_reason(
    conversion: Conversion,
) -> None:
    dropped = _notes(conversion, NoteKind.DROPPED)

    assert "no MCP security levels" in dropped["agents[0].backend.mcp_servers[0].security"]
    assert "'sse'" in dropped["agents[0].backend.mcp_servers[3]"]


def test_a_mapping_of_servers_is_named_by_its_keys(conversion: Conversion) -> None:
    servers = _servers(conversion, 1)

    assert servers["weather"] == {
        "name": "weather", "command": "uvx", "args": ["mcp-weather"], "cwd": "servers",
    }  # fmt: skip


def test_a_name_conclave_cannot_put_in_tool_names_is_fixed_and_says_so(
    conversion: Conversion,
) -> None:
    assert "my_odd_server-name" in _servers(conversion, 1)
    changed = _notes(conversion, NoteKind.CHANGED)
    assert (
        "'my_odd_server-name'" in changed["agents[1].backend.mcp_servers.my__odd_server-name.name"]
    )


def test_every_mcp_key_dropped_has_exactly_one_note(conversion: Conversion) -> None:
    paths = sorted(n.path for n in conversion.notes if n.kind is NoteKind.DROPPED)

    assert paths == [
        "agents[0].backend.exclude_tools[1]",
        "agents[0].backend.mcp_servers[0].security",
        "agents[0].backend.mcp_servers[3]",
    ]


def test_the_import_writes_a_config_whose_servers_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "brave-key")
    monkeypatch.setenv("TRACKER_TOKEN", "tracker-token")
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(SOURCE), "-o", str(out)]) == ExitCode.OK

    agents = load_config(out).agents
    search, discord, tracker = agents[0].mcp_servers
    assert isinstance(search, StdioMcpServer) and search.env == {"BRAVE_API_KEY": "brave-key"}
    assert isinstance(discord, StdioMcpServer) and discord.tools.deny == ("send_webhook",)
    assert isinstance(tracker, StreamableHttpMcpServer)
    assert tracker.headers == {"Authorization": "Bearer tracker-token"}
    assert [s.name for s in agents[1].mcp_servers] == ["weather", "my_odd_server-name"]
    assert "${BRAVE_API_KEY}" in out.read_text()  # the key itself is never written
    assert "mcp_servers[0].security" in capsys.readouterr().err


def test_a_variable_the_config_names_but_nobody_set_is_said_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    monkeypatch.setenv("TRACKER_TOKEN", "tracker-token")
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(SOURCE), "-o", str(out)]) == ExitCode.OK

    assert "${BRAVE_API_KEY}" in out.read_text()
    err = capsys.readouterr().err
    assert "the config names ${BRAVE_API_KEY}, which is not set here; set BRAVE_API_KEY" in err
    assert "TRACKER_TOKEN" not in err
