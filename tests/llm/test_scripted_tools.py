"""The scripted backend's tool-using policies, in a real ``run_loop`` over real tools: tool
steps before the workflow call and before the presentation, counted from the transcript so
that a restart goes on with the next step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from conclave.actors.agent.events import AgentStatusChanged, RoundStarted
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.coordination.workflow import (
    NEW_ANSWER,
    VOTE,
    NewAnswer,
    Vote,
    WorkflowTerminal,
)
from conclave.actors.llm.protocol import ToolCall, ToolSchema
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.actors.loop import Abort, LoopBudget, LoopEnd, TextTerminal, Transcript, run_loop
from conclave.actors.loop.checkpoint import CONTINUE, CheckpointDecision
from conclave.actors.prompts.coordination import presentation_messages, round_messages
from conclave.actors.tools.executor import AgentTools, agent_tools
from conclave.actors.tools.paths import PathGrant, PathPolicy, StaticGrants
from conclave.actors.tools.protocol import ToolResult
from conclave.config.loader import parse_config
from conclave.config.modes import CollaborationMode
from conclave.config.schema import ScriptedBackendConfig
from conclave.config.schema.backends import ToolStep
from tests.agent.harness import AGENT, open_agent
from tests.coordination.faults import CrashOnPoke, Poke

BUDGET = LoopBudget(max_tries=3)


class Recording:
    """The agent's tools plus the workflow schemas, journaling every call executed."""

    def __init__(self, tools: AgentTools, workflow: tuple[ToolSchema, ...]) -> None:
        self.tools = tools
        self.workflow = workflow
        self.executed: list[ToolCall] = []

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self.workflow + self.tools.schemas()

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        self.executed.append(call)
        return await self.tools.execute(call)


def _tools(
    workspace: Path,
    workflow: tuple[ToolSchema, ...] = (NEW_ANSWER, VOTE),
    mode: CollaborationMode = CollaborationMode.DEFAULT,
) -> Recording:
    grants = StaticGrants((PathGrant(root=workspace.resolve(), writable=True),))
    tools = agent_tools(
        agent="a1",
        mode=mode,
        policy=PathPolicy(grants, cwd=workspace),
        sandbox=None,
        workspace=workspace,
    )
    return Recording(tools, workflow)


def _backend(**policy: Any) -> ScriptedBackend:
    return ScriptedBackend(agent_id="a1", persona="", policy=ScriptedBackendConfig(**policy))


def _steps(*steps: tuple[str, dict[str, Any]]) -> tuple[ToolStep, ...]:
    return tuple(ToolStep(tool=tool, arguments=arguments) for tool, arguments in steps)


def _round(answers: tuple[AnswerView, ...] = ()) -> Transcript:
    return Transcript(
        round_messages(
            me="agent1",
            agents=2,
            task="Write the notes",
            answers=answers,
            tools=["new_answer", "vote"],
            persona="",
        )
    )


READ_WRITE = _steps(
    ("read_file", {"path": "input.txt"}),
    ("write_file", {"path": "out/{agent}-{me}-{revision}.txt", "content": "by {me}"}),
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "input.txt").write_text("the input\n")
    return tmp_path


async def test_tool_steps_run_in_order_before_the_answer(workspace: Path) -> None:
    tools = _tools(workspace)
    transcript = _round()
    outcome = await run_loop(
        transcript,
        backend=_backend(tool_steps=READ_WRITE),
        tools=tools,
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    assert outcome.end is LoopEnd.FINAL
    assert isinstance(outcome.value, NewAnswer)
    assert [c.name for c in tools.executed] == ["read_file", "write_file"]
    results = [m.content for m in transcript.messages if m.role == "tool"]
    assert results[0] == "     1\tthe input"
    assert results[1].startswith("Created out/a1-agent1-1.txt")


async def test_placeholders_are_filled_in_string_arguments(workspace: Path) -> None:
    await run_loop(
        _round(),
        backend=_backend(tool_steps=READ_WRITE),
        tools=_tools(workspace),
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    assert (workspace / "out" / "a1-agent1-1.txt").read_text() == "by agent1"


async def test_a_step_whose_tool_is_not_offered_is_left_out(workspace: Path) -> None:
    tools = _tools(workspace, mode=CollaborationMode.PLAN)
    outcome = await run_loop(
        _round(),
        backend=_backend(tool_steps=READ_WRITE),
        tools=tools,
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    assert isinstance(outcome.value, NewAnswer)
    assert [c.name for c in tools.executed] == ["read_file"]
    assert not (workspace / "out").exists()


async def test_a_failed_step_is_not_a_retry_of_the_answer(workspace: Path) -> None:
    failing = _steps(("read_file", {"path": "missing.txt"}))
    with_steps = await run_loop(
        _round(),
        backend=_backend(tool_steps=failing),
        tools=_tools(workspace),
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    without = await run_loop(
        _round(),
        backend=_backend(),
        tools=_tools(workspace),
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    assert isinstance(with_steps.value, NewAnswer) and isinstance(without.value, NewAnswer)
    assert with_steps.value.content == without.value.content


async def test_vote_steps_run_before_the_vote(workspace: Path) -> None:
    tools = _tools(workspace, workflow=(VOTE,))
    peer = AnswerView(label="agent2.1", content="their answer")
    outcome = await run_loop(
        _round((peer,)),
        backend=_backend(
            tool_steps=_steps(("write_file", {"path": "no.txt", "content": "x"})),
            vote_tool_steps=_steps(("list_directory", {})),
        ),
        tools=tools,
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    assert isinstance(outcome.value, Vote)
    assert [c.name for c in tools.executed] == ["list_directory"]


async def test_presentation_steps_run_before_the_text(workspace: Path) -> None:
    tools = _tools(workspace, workflow=())
    transcript = Transcript(
        presentation_messages(
            me="agent1",
            strategy="winner_present",
            task="Write the notes",
            own_label="agent1.2",
            answers=(AnswerView(label="agent1.2", content="my answer"),),
            persona="",
        )
    )
    steps = _steps(("write_file", {"path": "final-{revision}.txt", "content": "done"}))
    outcome = await run_loop(
        transcript,
        backend=_backend(presentation_tool_steps=steps),
        tools=tools,
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert outcome.value == "my answer"
    assert (workspace / "final-2.txt").read_text() == "done"


async def test_a_restart_mid_steps_goes_on_from_the_transcript(workspace: Path) -> None:
    steps = _steps(*((("read_file", {"path": "input.txt"}),) * 3))
    tools = _tools(workspace)
    transcript = _round()

    def crash_after_two(step: int) -> CheckpointDecision:
        return Abort(reason="crashed") if step == 2 else CONTINUE

    first = await run_loop(
        transcript,
        backend=_backend(tool_steps=steps),
        tools=tools,
        terminal=WorkflowTerminal(),
        budget=BUDGET,
        checkpoint=crash_after_two,
    )
    assert first.end is LoopEnd.ABORTED
    assert len(tools.executed) == 2
    # A new incarnation: a fresh backend (no memory of its own) over the same transcript.
    again = await run_loop(
        transcript,
        backend=_backend(tool_steps=steps),
        tools=tools,
        terminal=WorkflowTerminal(),
        budget=BUDGET,
    )
    assert isinstance(again.value, NewAnswer)
    assert [c.name for c in tools.executed] == ["read_file"] * 3
    assert len({c.id for c in tools.executed}) == 3


async def test_an_agent_restarted_mid_steps_makes_each_step_once(
    workspace: Path, autojump_clock: object
) -> None:
    # One LLM call a second: steps 0 and 1 are made by 2.0; the agent crashes at 2.5, while
    # step 2's call is in flight. Its successor goes on from the transcript in its memory.
    steps = _steps(*((("read_file", {"path": "input.txt"}),) * 3))
    tools = _tools(workspace, workflow=())
    backend = _backend(latency=1.0, tool_steps=steps)
    async with open_agent(backend, tools=tools, faults=CrashOnPoke()) as run:
        run.start()
        await trio.sleep(2.5)
        assert len(tools.executed) == 2
        run.system.tell_nowait(agent_address(AGENT), Poke())
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    assert [c.name for c in tools.executed] == ["read_file"] * 3
    assert len({c.id for c in tools.executed}) == 3
    assert backend.calls == 5  # the call the crash interrupted was asked again
    assert len(run.tap.of_type(RoundStarted)) == 1
    assert len(run.desk.submissions) == 1


def test_tool_steps_load_from_yaml_data() -> None:
    config = parse_config(
        {
            "agents": [
                {
                    "id": "a1",
                    "backend": {
                        "type": "scripted",
                        "tool_steps": [{"tool": "read_file", "arguments": {"path": "x"}}],
                        "presentation_tool_steps": [{"tool": "list_directory"}],
                    },
                }
            ]
        }
    )
    backend = config.agents[0].backend
    assert isinstance(backend, ScriptedBackendConfig)
    assert backend.tool_steps == (ToolStep(tool="read_file", arguments={"path": "x"}),)
    assert backend.presentation_tool_steps == (ToolStep(tool="list_directory"),)


@pytest.mark.parametrize(
    ("tool", "message"),
    [("vote", "is a workflow call"), ("new_answer", "is a workflow call"), ("Read File", "not")],
)
def test_a_tool_step_must_name_a_non_workflow_tool(tool: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolStep(tool=tool)


def test_tool_steps_do_not_make_a_config_unhashable() -> None:
    policy = ScriptedBackendConfig(tool_steps=_steps(("read_file", {"path": "x"})))
    assert hash(policy) == hash(attrs.evolve(policy))
