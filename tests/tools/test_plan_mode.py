"""Plan mode performs no write: only read-only tools are offered, and a write tool that is
called anyway is refused twice over (by the executor, and again by the tools' context)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conclave.actors.tools.catalogue import ALL_TOOLS
from conclave.actors.tools.executor import AgentTools
from conclave.actors.tools.spec import ToolContext
from conclave.config.modes import CollaborationMode
from tests.tools.conftest import MakeTools
from tests.tools.helpers import ShellSandbox, call

PLAN = CollaborationMode.PLAN

EVERY_WRITE: list[tuple[str, dict[str, object]]] = [
    ("write_file", {"path": "new.txt", "content": "x"}),
    ("write_file", {"path": "a.txt", "content": "x"}),
    ("edit_file", {"path": "a.txt", "old": "original", "new": "x"}),
    ("delete_file", {"path": "a.txt"}),
    ("run_shell", {"command": "echo x > new.txt"}),
    ("run_shell", {"command": "echo x >> a.txt"}),
]


def _untouched(workspace: Path) -> bool:
    return os.listdir(workspace) == ["a.txt"] and (
        (workspace / "a.txt").read_text() == "original\n"
    )


async def test_plan_mode_offers_only_read_only_tools(make_tools: MakeTools) -> None:
    offered = make_tools(mode=PLAN).schemas()
    assert [s.name for s in offered] == ["read_file", "list_directory", "glob", "search"]
    assert all(s.read_only for s in offered)


async def test_the_other_modes_offer_every_tool(make_tools: MakeTools) -> None:
    for mode in (CollaborationMode.DEFAULT, CollaborationMode.EXECUTE):
        assert [s.name for s in make_tools(mode=mode).schemas()] == [s.name for s in ALL_TOOLS]


@pytest.mark.parametrize(("tool", "arguments"), EVERY_WRITE)
async def test_plan_mode_refuses_every_write_called_anyway(
    make_tools: MakeTools,
    workspace: Path,
    sandbox: ShellSandbox,
    tool: str,
    arguments: dict[str, object],
) -> None:
    (workspace / "a.txt").write_text("original\n")
    result = await call(make_tools(mode=PLAN), tool, **arguments)
    assert not result.ok
    assert f"plan mode is read-only: {tool} changes files and is not available" in (
        result.error or ""
    )
    assert _untouched(workspace)
    assert sandbox.commands == []


@pytest.mark.parametrize(("tool", "arguments"), EVERY_WRITE)
async def test_the_context_refuses_a_write_that_got_past_the_executor(
    workspace: Path,
    make_tools: MakeTools,
    sandbox: ShellSandbox,
    tool: str,
    arguments: dict[str, object],
) -> None:
    (workspace / "a.txt").write_text("original\n")
    planning = make_tools(mode=PLAN).context
    # An executor that (wrongly) offers every tool, over the plan-mode context.
    leaky = AgentTools(ALL_TOOLS, context=planning, mode=CollaborationMode.DEFAULT)
    result = await call(leaky, tool, **arguments)
    assert not result.ok
    assert "plan mode is read-only" in (result.error or "")
    assert _untouched(workspace)
    assert sandbox.commands == []


async def test_the_same_shell_redirect_writes_outside_plan_mode(
    make_tools: MakeTools, workspace: Path, sandbox: ShellSandbox
) -> None:
    result = await call(make_tools(), "run_shell", command="echo x > new.txt")
    assert result.ok
    assert (workspace / "new.txt").read_text() == "x\n"


async def test_plan_mode_still_reads(make_tools: MakeTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("original\n")
    result = await call(make_tools(mode=PLAN), "read_file", path="a.txt")
    assert result.output == "     1\toriginal"


def test_the_plan_mode_context_may_not_write(make_tools: MakeTools) -> None:
    context: ToolContext = make_tools(mode=PLAN).context
    assert context.may_write is False
    assert make_tools().context.may_write is True
