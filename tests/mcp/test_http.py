"""A streamable-HTTP MCP server (tests/mcp/http_server.py, the SDK's own server API, a process
on loopback): its tools are listed and called with the config's ``headers`` sent, and a server
that refuses the token, serves another path or is not there fails alone, saying why."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.mcp.events import McpServerFailed
from conclave.actors.mcp.server import ServerStatus
from conclave.actors.mcp.tools import with_mcp_tools
from conclave.actors.tools.protocol import NO_TOOLS, ToolResult
from conclave.config.modes import CollaborationMode
from conclave.config.schema.mcp import StreamableHttpMcpServer
from tests.mcp.conftest import HttpServer, open_started, unused_port
from tests.mcp.test_cli import conclave, events

_DEFAULT = CollaborationMode.DEFAULT


def http(
    name: str, url: str, token: str | None = None, **fields: object
) -> StreamableHttpMcpServer:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return StreamableHttpMcpServer(name=name, url=url, headers=headers, **fields)  # type: ignore[arg-type]


async def call(tools: object, name: str, **arguments: object) -> ToolResult:
    execute = tools.execute  # type: ignore[attr-defined]
    result: ToolResult = await execute(
        ToolCall(id="c1", name=name, arguments=json.dumps(arguments))
    )
    return result


async def test_an_http_servers_tools_are_offered_with_their_read_only_hints(
    http_server: HttpServer,
) -> None:
    async with open_started(http("web", http_server.url, http_server.token)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        flags = {s.name: s.read_only for s in tools.schemas()}

    assert flags == {
        "mcp__web__add": True,
        "mcp__web__Get-Sum": True,
        "mcp__web__remember": False,
    }


async def test_calls_reach_the_http_server_with_the_configs_headers_on_every_request(
    http_server: HttpServer,
) -> None:
    async with open_started(http("web", http_server.url, http_server.token)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        added = await call(tools, "mcp__web__add", a=2, b=3)
        summed = await call(tools, "mcp__web__Get-Sum", numbers=[1, 2, 3, 4])

    assert (added.ok, added.output) == (True, "5")
    assert (summed.ok, summed.output) == (True, "sum=10")
    seen = http_server.seen()
    assert len(seen) >= 4  # initialize, initialized, tools/list, the calls
    assert set(seen) == {f"Bearer {http_server.token}"}


async def test_a_wrong_token_fails_that_server_only_naming_the_status_and_the_headers(
    http_server: HttpServer,
) -> None:
    good = http("web", http_server.url, http_server.token)
    wrong = http("locked", http_server.url, "not-the-token")
    async with open_started(good, wrong) as started:
        locked, web = started.state("locked"), started.state("web")

    assert web.status is ServerStatus.UP
    assert locked.status is ServerStatus.FAILED
    assert locked.failure == (
        f"the server at {http_server.url} answered HTTP 401 Unauthorized: check its 'headers' "
        "(a missing or wrong token?)"
    )
    assert [e.server for e in started.tap.of_type(McpServerFailed)] == ["locked"]
    assert "not-the-token" not in str(started.tap.events)


async def test_a_url_with_the_wrong_path_fails_naming_the_status_and_the_path(
    http_server: HttpServer,
) -> None:
    url = http_server.url.replace("/mcp", "/not-mcp")
    async with open_started(http("web", url, http_server.token)) as started:
        web = started.state("web")

    assert web.status is ServerStatus.FAILED
    assert f"the server at {url} answered HTTP 404 Not Found" in (web.failure or "")
    assert "check the path in 'url'" in (web.failure or "")


async def test_an_unreachable_server_fails_alone_saying_nothing_answers_there(
    http_server: HttpServer,
) -> None:
    nowhere = f"http://127.0.0.1:{unused_port()}/mcp"
    async with open_started(
        http("web", http_server.url, http_server.token), http("gone", nowhere)
    ) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        offered = sorted(s.name for s in tools.schemas())
        gone = started.state("gone")

    assert gone.status is ServerStatus.FAILED
    assert (gone.failure or "").startswith(f"cannot reach {nowhere} (")
    assert "is the server running, and is 'url' right?" in (gone.failure or "")
    assert offered == ["mcp__web__Get-Sum", "mcp__web__add", "mcp__web__remember"]


async def test_plan_mode_offers_an_http_servers_read_only_tools_only(
    http_server: HttpServer,
) -> None:
    async with open_started(http("web", http_server.url, http_server.token)) as started:
        tools = with_mcp_tools(
            NO_TOOLS, started.servers.all(), agent="a", mode=CollaborationMode.PLAN
        )
        offered = sorted(s.name for s in tools.schemas())
        refused = await call(tools, "mcp__web__remember", note="x")

    assert offered == ["mcp__web__Get-Sum", "mcp__web__add"]
    assert not refused.ok


def _config(path: Path, servers: str, steps: str = "") -> Path:
    path.write_text(
        f"""
mcp_servers:
{servers}
agents:
  - id: caller
    backend:
      type: scripted
      tool_steps:
{steps or "        []"}
"""
    )
    return path


def _web(url: str) -> str:
    return f"""  - name: web
    type: streamable-http
    url: {url}
    headers: {{Authorization: "Bearer ${{SPEC_MCP_TOKEN}}"}}
"""


def _with_token(server: HttpServer) -> dict[str, str]:
    return {**os.environ, "SPEC_MCP_TOKEN": server.token}


def test_mcp_list_lists_an_http_servers_tools_sending_the_configs_headers(
    http_server: HttpServer, tmp_path: Path
) -> None:
    config = _config(tmp_path / "conf.yaml", _web(http_server.url))

    done = conclave(
        "mcp", "list", "--config", str(config), cwd=tmp_path, env=_with_token(http_server)
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "web: 3 tools"
    rows = {line.split()[1]: line.split()[0] for line in done.stdout.splitlines()[1:]}
    assert rows == {"mcp__web__add": "ro", "mcp__web__Get-Sum": "ro", "mcp__web__remember": "rw"}
    assert http_server.seen() and set(http_server.seen()) == {f"Bearer {http_server.token}"}


def test_a_scripted_run_calls_an_http_servers_tools_named_with_hyphens_and_upper_case(
    http_server: HttpServer, tmp_path: Path
) -> None:
    steps = """        - tool: mcp__web__Get-Sum
          arguments: {numbers: [4, 5, 6]}
        - tool: mcp__web__remember
          arguments: {note: from the run}
"""
    config = _config(tmp_path / "conf.yaml", _web(http_server.url), steps)

    done = conclave(
        "run", "Sum the numbers", "--config", str(config), "--output-format", "stream-json",
        cwd=tmp_path, env=_with_token(http_server),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    calls = {e["tool"]: e for e in lines if e["type"] == "tool_call_finished"}
    assert calls["mcp__web__Get-Sum"]["output"] == "sum=15"
    assert calls["mcp__web__remember"]["output"] == "1 notes"
    assert lines[-1]["termination"] == "completed"
    assert set(http_server.seen()) == {f"Bearer {http_server.token}"}


def test_a_run_whose_http_server_is_unreachable_goes_on_and_names_it_and_why(
    http_server: HttpServer, tmp_path: Path
) -> None:
    nowhere = f"http://127.0.0.1:{unused_port()}/mcp"
    servers = (
        _web(http_server.url) + f"  - {{name: gone, type: streamable-http, url: '{nowhere}'}}\n"
    )
    steps = """        - tool: mcp__web__add
          arguments: {a: 1, b: 2}
"""
    config = _config(tmp_path / "conf.yaml", servers, steps)

    done = conclave(
        "run", "Add", "--config", str(config), "--output-format", "stream-json",
        cwd=tmp_path, env=_with_token(http_server),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    failed = [(e["server"], e["reason"]) for e in lines if e["type"] == "mcp_server_failed"]
    assert len(failed) == 1 and failed[0][0] == "gone"
    assert str(failed[0][1]).startswith(f"cannot reach {nowhere}")
    assert [e["server"] for e in lines if e["type"] == "mcp_server_ready"] == ["web"]
    finished = [e for e in lines if e["type"] == "tool_call_finished"]
    assert [(e["tool"], e["output"]) for e in finished] == [("mcp__web__add", "3")]
    assert lines[-1]["termination"] == "completed"


def test_mcp_list_exits_1_naming_an_http_server_that_refused_the_token(
    http_server: HttpServer, tmp_path: Path
) -> None:
    config = _config(tmp_path / "conf.yaml", _web(http_server.url))

    done = conclave(
        "mcp", "list", "--config", str(config), cwd=tmp_path,
        env={**os.environ, "SPEC_MCP_TOKEN": "stale"},
    )  # fmt: skip

    assert done.returncode == 1
    assert done.stdout.startswith(
        f"web: FAILED: the server at {http_server.url} answered HTTP 401 Unauthorized"
    )
