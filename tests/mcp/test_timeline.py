"""The timeline (live progress on stderr, ``conclave replay``) has a line for each MCP server
that came up, with its tool count, and for each that failed, with why."""

from __future__ import annotations

from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.ui.timeline import describe


def _ready(tools: int, incarnation: int = 1) -> McpServerReady:
    names = tuple(f"mcp__fs__tool{i}" for i in range(tools))
    return McpServerReady(at=1.0, server="fs", tools=names, incarnation=incarnation)


def test_a_server_that_came_up_is_a_line_with_its_tool_count() -> None:
    assert describe(_ready(14)) == "mcp server fs ready: 14 tools"
    assert describe(_ready(1)) == "mcp server fs ready: 1 tool"


def test_a_server_that_came_back_after_a_crash_says_so() -> None:
    assert describe(_ready(14, incarnation=2)) == (
        "mcp server fs ready: 14 tools (restarted, incarnation 2)"
    )


def test_a_server_that_failed_is_one_line_with_why_and_no_terminal_escapes() -> None:
    event = McpServerFailed(
        at=1.0,
        server="reader/git",
        reason="the command 'mcp-server-git' is not found:\nnot on PATH\x1b[2J",
        stderr="",
        gave_up=False,
    )

    assert describe(event) == (
        "mcp server reader/git failed: the command 'mcp-server-git' is not found: not on "
        "PATH\\x1b[2J"
    )
