"""The interactive agent end to end on the scripted backend: it answers a short question
itself, launches runs through the normal driver for other work, plans then executes when
asked, and goes on talking when a run is refused or a launch is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import trio
import trio.testing

from conclave.actors.human.run_approval import (
    Approved,
    RefuseAll,
    RunApprovalRequest,
    RunDecision,
)
from conclave.actors.interactive.outcome import LaunchStatus
from conclave.actors.interactive.session import LaunchTool
from conclave.actors.llm.protocol import ToolCall
from conclave.actors.planning.plan import parse_plan
from conclave.config.schema import ScriptedBackendConfig
from conclave.config.schema.interactive import InteractiveModeConfig
from tests.interactive.helpers import panel, session, tool_names


async def test_a_short_question_is_answered_without_a_run(tmp_path: Path) -> None:
    agent, backend = session(tmp_path)
    reply = await agent.turn("How many agents are configured?")
    assert reply.text == "No run needed: 3 agents are configured: agent-1, agent-2, agent-3."
    assert reply.outcomes == ()
    assert not (tmp_path / "runs").exists()
    assert len(backend.requests) == 1


async def test_the_agent_is_offered_launch_run_and_no_coordination_tool(tmp_path: Path) -> None:
    agent, backend = session(tmp_path)
    await agent.turn("Write a limerick about trio")
    assert tool_names(backend) == [{"launch_run"}, {"launch_run"}]


async def test_other_work_launches_a_multi_agent_run_through_the_driver(tmp_path: Path) -> None:
    agent, _ = session(tmp_path)
    reply = await agent.turn("Write a limerick about trio")
    [outcome] = reply.outcomes
    assert outcome.status is LaunchStatus.COMPLETED
    summary = outcome.coordination_summary
    assert summary is not None and summary.winner is not None
    assert sorted(summary.answer_labels) == ["agent1.1", "agent2.1", "agent3.1"]
    assert set(summary.votes) == {"agent-1", "agent-2", "agent-3"}
    assert outcome.run_id is not None
    assert (tmp_path / "runs" / outcome.run_id / "events.jsonl").is_file()
    assert reply.text is not None and outcome.final_answer is not None
    assert outcome.final_answer.splitlines()[0] in reply.text


async def test_the_task_is_the_runs_first_user_message(tmp_path: Path) -> None:
    agent, _ = session(tmp_path)
    reply = await agent.turn("Write a limerick about trio")
    [outcome] = reply.outcomes
    assert outcome.final_answer is not None
    assert outcome.final_answer.startswith("On “Write a limerick about trio”")


async def test_the_tool_result_carries_the_outcome_the_agent_reads(tmp_path: Path) -> None:
    agent, _ = session(tmp_path)
    await agent.turn("Write a limerick about trio")
    result = json.loads(agent.transcript.messages[-2].content)
    assert {"final_answer", "workspace_path", "coordination_summary"} <= set(result)
    assert set(result["coordination_summary"]) == {"winner", "votes", "rounds", "answer_labels"}


async def test_a_refused_run_comes_back_and_the_conversation_goes_on(tmp_path: Path) -> None:
    agent, _ = session(tmp_path, approver=RefuseAll(reason="the person cancelled it"))
    reply = await agent.turn("Write a limerick about trio")
    assert [o.status for o in reply.outcomes] == [LaunchStatus.NOT_APPROVED]
    assert reply.text == "The run was not launched (the person cancelled it). What next?"
    assert not (tmp_path / "runs").exists()
    assert (await agent.turn("Are you still there?")).text is not None


async def test_an_edited_task_is_the_one_that_runs(tmp_path: Path) -> None:
    asked: list[RunApprovalRequest] = []

    class Editor:
        async def approve_run(self, request: RunApprovalRequest) -> RunDecision:
            asked.append(request)
            return Approved(task="Write a sonnet instead", context=request.context)

    agent, _ = session(tmp_path, approver=Editor())
    reply = await agent.turn("Write a limerick about trio")
    assert asked[0].task == "Write a limerick about trio"
    assert asked[0].agents == ("agent-1", "agent-2", "agent-3")
    [outcome] = reply.outcomes
    assert outcome.final_answer is not None
    assert outcome.final_answer.startswith("On “Write a sonnet instead”")


async def test_planning_then_execution_runs_two_runs_in_order(tmp_path: Path) -> None:
    agent, _ = session(tmp_path)
    reply = await agent.turn("Plan and then build a small todo CLI")
    [outcome] = reply.outcomes
    assert outcome.status is LaunchStatus.COMPLETED
    assert outcome.plan is not None and outcome.planning is not None
    planning, execution = outcome.runs
    assert (tmp_path / "runs" / planning.run_id / "plans" / "plan-v1.json").is_file()
    assert planning.final_answer is not None and parse_plan(planning.final_answer) is not None
    assert execution.final_answer is not None
    assert "Carry out this approved plan" in execution.final_answer
    assert reply.text is not None and reply.text.startswith("Planned, then executed the plan")


async def test_only_planning_makes_one_planning_run(tmp_path: Path) -> None:
    agent, _ = session(tmp_path)
    reply = await agent.turn("Just plan a small todo CLI")
    [outcome] = reply.outcomes
    assert len(outcome.runs) == 1 and outcome.plan is not None and outcome.planning is None


async def test_a_wrong_launch_comes_back_as_a_tool_error(tmp_path: Path) -> None:
    agent, _ = session(tmp_path)
    result = await LaunchTool(agent.launcher).execute(
        ToolCall(id="c1", name="launch_run", arguments='{"tsk": "x"}')
    )
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith("launch_run: unknown parameter 'tsk' (did you mean 'task'?)")


async def test_cancelling_a_turn_ends_its_run_cancelled(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    settings = InteractiveModeConfig(backend=ScriptedBackendConfig())
    agent, _ = session(tmp_path, config=panel(latency=10.0), settings=settings)
    with trio.move_on_after(5):
        await agent.turn("Write a limerick about trio")
    [log] = (tmp_path / "runs").glob("*/events.jsonl")
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["kind"], last["termination"]) == ("run_ended", "cancelled")
    assert agent.transcript.messages[-1].role == "user"  # the unfinished step left nothing
