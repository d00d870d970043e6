"""A run that tries every route by which a secret could reach what Conclave writes, for the
specs that grep everything written afterwards (tests/cli/test_secret_routes.py,
tests/serve/test_secrets.py).

The secrets: an agent's API key in the variable its ``api_key_env`` names (a name no pattern
of secret names matches), and a token an MCP server gets in its ``env``. The routes:

- ``env``: a shell command prints the sandbox's environment;
- a file holding the key, read by ``cat`` and by ``read_file``;
- an MCP server echoing them: ``get-env`` prints the server's environment, and ``echo``
  repeats the key the model wrote into its arguments;
- a 401 whose body quotes the key it refused (the loopback server plays the provider).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conclave.actors.llm.redaction import REDACTED
from conclave.actors.sandbox.local import bubblewrap
from tests.llm.loopback import Recorded, Reply
from tests.llm.wire import openai_error
from tests.mcp.conftest import program

KEY = "zq-RECOGNISABLE-7d1c0e5f9a2b4c6d8e0f1a2b"
"""The agent's key: no provider's shape, so only redaction by value can catch it."""
KEY_VARIABLE = "ZQ_ALICE_CRED"
"""Where it lives: matched by none of the sandbox's secret-name patterns."""
TOKEN = "mcp-FINDABLE-0a1b2c3d4e5f60718293"
"""The MCP server's token, from the variable :data:`TOKEN_VARIABLE` through its ``env``."""
TOKEN_VARIABLE = "ZQ_MCP_VALUE"
FRAGMENTS = (KEY, TOKEN, "RECOGNISABLE", "FINDABLE")
"""What must appear nowhere: the secrets, and recognisable parts of them."""


def secrets_environment() -> dict[str, str]:
    return {KEY_VARIABLE: KEY, TOKEN_VARIABLE: TOKEN}


def refuse_with_the_key(request: Recorded) -> Reply:
    """A 401 whose body quotes the key it was sent, as providers do."""
    sent = request.headers.get("authorization", "").removeprefix("Bearer ")
    return openai_error(401, f"Incorrect API key provided: {sent}.", code="invalid_api_key")


def require_tools() -> str:
    """The everything MCP server's program; skips (fails under CI) without it or without
    bubblewrap, which ``run_shell`` needs beside a read-only context path."""
    if bubblewrap() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap does not work here (CI=true: .ci/run installs it)")
        pytest.skip("bubblewrap is not installed or does not work here")
    return program(
        "mcp-server-everything", "npm install -g @modelcontextprotocol/server-everything"
    )


def routes_config(base_url: str, context: Path, everything: str) -> dict[str, Any]:
    """The config, as YAML data with ``${VAR}`` references: ``alice`` on the loopback
    server (refused with the key echoed), ``bob`` trying every other route before he
    answers, ``carol`` answering plainly."""
    (context / "key.txt").write_text(f"{KEY}\n", encoding="utf-8")
    steps = [
        {"tool": "run_shell", "arguments": {"command": "env"}},
        {"tool": "run_shell", "arguments": {"command": f"cat {context / 'key.txt'}"}},
        {"tool": "read_file", "arguments": {"path": str(context / "key.txt")}},
        {"tool": "mcp__every__get-env"},
        {"tool": "mcp__every__echo", "arguments": {"message": f"the key is {KEY}"}},
    ]
    return {
        "agents": [
            {
                "id": "alice",
                "backend": {
                    "type": "openai",
                    "model": "gpt-alice",
                    "base_url": base_url,
                    "api_key_env": KEY_VARIABLE,
                    "max_retries": 0,
                },
            },
            {"id": "bob", "backend": {"type": "scripted", "seed": 1, "tool_steps": steps}},
            {"id": "carol", "backend": {"type": "scripted", "seed": 2}},
        ],
        "mcp_servers": [
            {
                "name": "every",
                "command": everything,
                "env": {"SERVICE_AUTH": f"${{{TOKEN_VARIABLE}}}"},
            }
        ],
        "orchestrator": {
            "quiet_period": None,
            "context_paths": [{"path": str(context), "permission": "read"}],
        },
    }


def assert_no_file_holds_a_secret(root: Path) -> list[Path]:
    """Every file under ``root`` searched; returns them."""
    files = [path for path in root.rglob("*") if path.is_file()]
    for path in files:
        assert_written_nowhere(path.read_bytes(), str(path))
    return files


def assert_written_nowhere(data: bytes | str, where: str) -> None:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    for fragment in FRAGMENTS:
        assert fragment not in text, f"{fragment!r} is in {where}"


def assert_every_route_was_tried(events: list[dict[str, Any]], *, kind: str = "kind") -> None:
    """Each route ran and met the redactor (or, for ``env``, found nothing to show), and
    alice's key was refused: so the secrets were on their way out, not missing."""
    calls = [e for e in events if e[kind] == "tool_call_finished" and e["agent"] == "bob"]
    shown = {(e["tool"], json.loads(e["arguments"]).get("command")): e for e in calls}
    environment = shown[("run_shell", "env")]["output"]
    assert environment.startswith(("PATH=", "HOME=")) or "PATH=" in environment
    assert KEY_VARIABLE not in environment and TOKEN_VARIABLE not in environment
    assert REDACTED not in environment  # scrubbed before the command ran, not redacted after
    cat = next(e for (tool, command), e in shown.items() if command and "cat" in command)
    assert cat["output"] == f"{REDACTED}\n"
    assert REDACTED in shown[("read_file", None)]["output"]
    assert shown[("mcp__every__get-env", None)]["output"].count(REDACTED) == 1
    echo = shown[("mcp__every__echo", None)]
    assert REDACTED in echo["output"] and REDACTED in echo["arguments"]
    excluded = [e for e in events if e[kind] == "agent_excluded" and e["agent"] == "alice"]
    assert excluded and REDACTED in excluded[0]["reason"]
