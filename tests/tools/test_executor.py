"""The executor: unknown tools, argument errors, the before_call hook, timing, capping what the
model sees, and never raising into the loop."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.sandbox.local import LocalSandbox
from conclave.actors.sandbox.protocol import ShellOutcome
from conclave.actors.tools.executor import AgentTools, ToolLimits
from conclave.actors.tools.protocol import ToolResult
from conclave.actors.tools.spec import ToolContext, ToolSpec
from conclave.actors.tools.text import cap
from conclave.config.modes import CollaborationMode
from conclave.config.schema.sandbox import SandboxConfig
from tests.tools.conftest import MakeTools
from tests.tools.helpers import ShellSandbox, call, call_raw

_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def _with(spec: ToolSpec, tools: AgentTools) -> AgentTools:
    return AgentTools([spec], context=tools.context, mode=CollaborationMode.DEFAULT)


async def test_an_unknown_tool_names_the_available_ones(tools: AgentTools) -> None:
    result = await call(tools, "browse", url="x")
    assert not result.ok
    assert result.error == (
        "there is no tool named 'browse'; the tools available are: read_file, list_directory, "
        "glob, search, write_file, edit_file, delete_file, run_shell"
    )


async def test_bad_arguments_are_an_error_naming_the_argument(tools: AgentTools) -> None:
    result = await call(tools, "read_file", path="a.txt", offset=0)
    assert not result.ok
    assert result.error == "argument 'offset': expected at least 1, got 0"


async def test_malformed_json_is_an_error(tools: AgentTools) -> None:
    result = await call_raw(tools, "read_file", '{"path": "a')
    assert not result.ok
    assert "not valid JSON" in (result.error or "")


async def test_a_tool_that_raises_is_an_error_not_an_exception(tools: AgentTools) -> None:
    async def boom(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
        raise RuntimeError("kaput")

    broken = _with(ToolSpec(name="boom", description="", parameters=_OBJECT, run=boom), tools)
    result = await call(broken, "boom")
    assert not result.ok
    assert result.error == "the tool boom failed: RuntimeError: kaput"


async def test_each_call_is_timed(tools: AgentTools, autojump_clock: trio.abc.Clock) -> None:
    async def slow(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
        await trio.sleep(3)
        return ToolResult(ok=True, output="done")

    timed = _with(ToolSpec(name="slow", description="", parameters=_OBJECT, run=slow), tools)
    result = await call(timed, "slow")
    assert result.metadata.duration == 3


async def test_output_over_the_cap_is_truncated_with_the_count(
    make_tools: MakeTools, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("x" * 100)
    tools = make_tools(limits=ToolLimits(max_output_bytes=20))
    result = await call(tools, "read_file", path="a.txt")
    assert result.output == "     1\t" + "x" * 13 + "\n[truncated: 87 bytes]"
    assert result.metadata.truncated_bytes == 87


async def test_an_error_over_the_cap_is_truncated_too(
    make_tools: MakeTools, sandbox: ShellSandbox
) -> None:
    sandbox.outcome = ShellOutcome(exit_code=1, output="e" * 200, timed_out=False, duration=0)
    tools = make_tools(limits=ToolLimits(max_output_bytes=50))
    result = await call(tools, "run_shell", command="false")
    assert (result.error or "").endswith("[truncated: 182 bytes]")


def test_cap_never_splits_a_character() -> None:
    text, cut = cap("é" * 10, 5)
    assert text == "éé\n[truncated: 16 bytes]"
    assert cut == 16


def test_cap_leaves_short_text_alone() -> None:
    assert cap("short", 5) == ("short", 0)


async def test_before_call_can_refuse_a_call(make_tools: MakeTools, workspace: Path) -> None:
    asked: list[ToolCall] = []

    async def gate(call: ToolCall, *_: object) -> str | None:
        asked.append(call)
        return "a human said no"

    tools = make_tools(before_call=gate)
    result = await call(tools, "write_file", path="a.txt", content="x")
    assert result.error == "the call to write_file was refused: a human said no"
    assert [c.name for c in asked] == ["write_file"]
    assert not (workspace / "a.txt").exists()


async def test_before_call_returning_none_lets_the_call_run(
    make_tools: MakeTools, workspace: Path
) -> None:
    async def gate(call: ToolCall, *_: object) -> str | None:
        return None

    result = await call(make_tools(before_call=gate), "write_file", path="a.txt", content="x")
    assert result.ok
    assert (workspace / "a.txt").read_text() == "x"


async def test_before_call_is_not_asked_for_invalid_calls(make_tools: MakeTools) -> None:
    asked: list[ToolCall] = []

    async def gate(call: ToolCall, *_: object) -> str | None:
        asked.append(call)
        return None

    await call(make_tools(before_call=gate), "read_file", path=3)
    assert asked == []


# run_shell


async def test_without_a_sandbox_no_shell_is_offered(make_tools: MakeTools) -> None:
    tools = make_tools(with_sandbox=False)
    assert "run_shell" not in [s.name for s in tools.schemas()]
    assert not (await call(tools, "run_shell", command="ls")).ok


async def test_run_shell_runs_in_the_workspace_with_the_default_timeout(
    tools: AgentTools, sandbox: ShellSandbox, workspace: Path
) -> None:
    result = await call(tools, "run_shell", command="pwd")
    assert result.output == f"{workspace}\n"
    assert result.metadata.exit_code == 0
    assert sandbox.commands == [("pwd", workspace, 120.0)]


async def test_run_shell_passes_the_timeout_asked_for(
    tools: AgentTools, sandbox: ShellSandbox
) -> None:
    await call(tools, "run_shell", command="true", timeout=5)
    assert sandbox.commands[0][2] == 5


async def test_run_shell_refuses_a_timeout_over_the_limit(
    make_tools: MakeTools, sandbox: ShellSandbox
) -> None:
    tools = make_tools(limits=ToolLimits(shell_max_timeout=60))
    result = await call(tools, "run_shell", command="true", timeout=61)
    assert result.error == (
        "argument 'timeout': expected at most 60 seconds, got 61; "
        "split the work into shorter commands"
    )
    assert sandbox.commands == []


async def test_a_failing_command_is_an_error_with_its_output(tools: AgentTools) -> None:
    result = await call(tools, "run_shell", command="echo oops; exit 3")
    assert not result.ok
    assert result.error == "the command exited with code 3:\noops\n"
    assert result.metadata.exit_code == 3


async def test_a_command_that_timed_out_says_so(tools: AgentTools, sandbox: ShellSandbox) -> None:
    sandbox.outcome = ShellOutcome(exit_code=None, output="partial", timed_out=True, duration=9)
    result = await call(tools, "run_shell", command="sleep 99", timeout=9)
    assert result.error == "the command was killed after 9s (its timeout); output so far:\npartial"


async def test_a_killed_command_says_so(tools: AgentTools, sandbox: ShellSandbox) -> None:
    sandbox.outcome = ShellOutcome(exit_code=None, output="", timed_out=False, duration=1)
    result = await call(tools, "run_shell", command="sleep 99")
    assert result.error == "the command was killed; output so far:\n(no output)"


async def test_the_sandbox_refusal_is_a_tool_error(
    tools: AgentTools, sandbox: ShellSandbox
) -> None:
    sandbox.refuse = "bubblewrap is not installed (apt install bubblewrap)"
    result = await call(tools, "run_shell", command="ls")
    assert result.error == (
        "run_shell cannot run here: bubblewrap is not installed (apt install bubblewrap)"
    )
    assert sandbox.commands == []


async def test_the_sandbox_truncation_is_reported(tools: AgentTools, sandbox: ShellSandbox) -> None:
    sandbox.outcome = ShellOutcome(
        exit_code=0, output="head", timed_out=False, duration=0, truncated_bytes=7
    )
    result = await call(tools, "run_shell", command="yes")
    assert result.metadata.truncated_bytes == 7


async def test_the_note_counts_what_the_sandbox_dropped(
    tools: AgentTools, sandbox: ShellSandbox
) -> None:
    sandbox.outcome = ShellOutcome(
        exit_code=0, output="head", timed_out=False, duration=0, truncated_bytes=7
    )
    result = await call(tools, "run_shell", command="yes")
    assert result.output == "head\n[truncated: 7 bytes]"


async def test_the_note_adds_the_sandboxs_drop_to_the_executors_cut(
    make_tools: MakeTools, sandbox: ShellSandbox
) -> None:
    sandbox.outcome = ShellOutcome(
        exit_code=0, output="x" * 100, timed_out=False, duration=0, truncated_bytes=5000
    )
    tools = make_tools(limits=ToolLimits(max_output_bytes=50))
    result = await call(tools, "run_shell", command="yes")
    assert result.output == "x" * 50 + "\n[truncated: 5050 bytes]"
    assert result.metadata.truncated_bytes == 5050


async def test_a_failed_commands_note_counts_what_the_sandbox_dropped(
    tools: AgentTools, sandbox: ShellSandbox
) -> None:
    sandbox.outcome = ShellOutcome(
        exit_code=1, output="head", timed_out=False, duration=0, truncated_bytes=7
    )
    result = await call(tools, "run_shell", command="yes; false")
    assert (result.error or "").endswith("head\n[truncated: 7 bytes]")
    assert result.output == ""


async def test_a_command_past_the_sandbox_cap_is_noted_with_every_byte_it_wrote(
    make_tools: MakeTools, sandbox: ShellSandbox, workspace: Path
) -> None:
    real = LocalSandbox(
        workspace=workspace,
        mounts=(),
        config=SandboxConfig(max_output_bytes=1000),
        use_bubblewrap=False,
    )
    tools = make_tools(limits=ToolLimits(max_output_bytes=100))
    tools.context = attrs.evolve(tools.context, sandbox=real)
    result = await call(tools, "run_shell", command="head -c 5000 /dev/zero | tr '\\0' a")
    assert result.output == "a" * 100 + "\n[truncated: 4900 bytes]"


async def test_a_before_call_hook_that_raises_is_an_error_not_an_exception(
    make_tools: MakeTools, workspace: Path
) -> None:
    async def broken(call: ToolCall, *_: object) -> str | None:
        raise RuntimeError("gate down")

    result = await call(make_tools(before_call=broken), "write_file", path="a.txt", content="x")
    assert result.error == "the tool write_file failed: RuntimeError: gate down"
    assert not (workspace / "a.txt").exists()


# refused or failed: whether the call ran at all


async def test_a_call_the_executor_refuses_is_marked_refused(
    make_tools: MakeTools, tools: AgentTools, sandbox: ShellSandbox
) -> None:
    async def gate(call: ToolCall, *_: object) -> str | None:
        return "a human said no"

    sandbox.refuse = "bubblewrap is not installed"
    refusals = [
        await call(tools, "browse", url="x"),
        await call(tools, "read_file", path="a.txt", offset=0),
        await call(tools, "write_file", path="/etc/passwd", content="x"),
        await call(make_tools(before_call=gate), "write_file", path="a.txt", content="x"),
        await call(tools, "run_shell", command="ls"),
    ]

    assert [(r.ok, r.refused) for r in refusals] == [(False, True)] * len(refusals)


async def test_a_call_that_ran_and_failed_is_not_marked_refused(tools: AgentTools) -> None:
    failed = await call(tools, "run_shell", command="echo oops; exit 3")
    missing = await call(tools, "read_file", path="no-such-file.txt")

    assert [(r.ok, r.refused) for r in (failed, missing)] == [(False, False)] * 2
