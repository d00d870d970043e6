"""Plan mode in the REPL: a planning turn's plan opens the approval dialog, and the decision
starts an execution turn, a revision, or nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import attrs

from conclave.actors.llm.protocol import CompletionRequest
from conclave.actors.planning.plan import parse_plan
from conclave.actors.prompts.modes import PLAN_MODE_MARKER
from conclave.config.modes import CollaborationMode
from conclave.ui.repl.planning import EXECUTING
from conclave.ui.repl.state import Dialog
from tests.repl.backends import prose, recording
from tests.repl.harness import CTRL_C, SHIFT_TAB, Session, play


async def _plan(session: Session, task: str) -> None:
    """Plan mode on, ``task`` planned, and the dialog open."""
    if not session.state.plan_mode:
        session.press(SHIFT_TAB)
        await session.until(lambda: session.state.plan_mode, "plan mode")
    await session.result_of(task)
    await session.until(lambda: session.state.dialog is Dialog.PLAN, "the plan dialog")


def _saved(session: Session) -> list[Path]:
    return sorted(session.log_root.glob("*/plans/plan-v*.json"))


def test_a_plan_opens_the_dialog_and_is_saved_under_the_runs_log_dir(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await _plan(session, "Plan a garden party")
        [saved] = _saved(session)
        assert saved.name == "plan-v1.json"
        assert parse_plan(saved.read_text()) is not None
        assert f"plan saved to {saved}" in session.transcript()
        session.press("4")  # Cancel
        await session.until(lambda: session.state.dialog is Dialog.NONE, "the dialog closed")

    play(scenario, tmp_path)


def test_a_plan_answer_is_shown_readably_not_as_json(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await _plan(session, "Plan a garden party")
        text = session.transcript()
        assert "Goal: Plan a garden party" in text
        assert "Steps:\n  1. " in text
        assert '"step_number"' not in text
        session.press("4")

    play(scenario, tmp_path)


def test_approving_with_an_addition_executes_the_plan_with_it(tmp_path: Path) -> None:
    statuses: list[str] = []

    async def scenario(session: Session) -> None:
        await _plan(session, "Plan a garden party")
        runs = session.state.usage.runs
        session.press("2")
        session.type("bring umbrellas")
        await session.until(lambda: session.state.running, "the execution run")
        statuses.append(session.state.status)
        await session.finish(runs, "the execution")

    state = play(scenario, tmp_path)
    assert statuses == [EXECUTING]
    execution = state.history[-1]
    assert "bring umbrellas" in execution.task
    assert "APPROVED PLAN" in execution.task
    assert state.collaboration is CollaborationMode.DEFAULT  # plan mode is over
    assert "Executing plan (saved at" in "".join(
        fragment[1] for block in state.transcript for fragment in block
    )


def test_revising_plans_again_with_the_feedback_and_saves_the_next_version(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        await _plan(session, "Plan a garden party")
        runs = session.state.usage.runs
        session.press("3")
        session.type("fewer guests")
        await session.finish(runs, "the revision")
        await session.until(lambda: session.state.dialog is Dialog.PLAN, "the revised plan")
        assert [p.name for p in _saved(session)] == ["plan-v1.json", "plan-v2.json"]
        revision = session.state.history[-1]
        assert "fewer guests" in revision.task
        assert session.state.history[-2].task == "Plan a garden party"  # the first plan
        session.press(CTRL_C)  # as Cancel
        await session.until(lambda: session.state.dialog is Dialog.NONE, "the dialog closed")

    play(scenario, tmp_path)


def test_an_answer_that_is_not_a_plan_is_shown_as_text_without_a_dialog(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.press(SHIFT_TAB)
        await session.until(lambda: session.state.plan_mode, "plan mode")
        result = await session.result_of("Plan a garden party")
        assert result.final_answer is not None
        await session.until(lambda: "not a plan" in session.transcript(), "the fallback")
        assert result.final_answer.splitlines()[0] in session.transcript()
        assert session.state.dialog is Dialog.NONE

    play(scenario, tmp_path, backend_factory=prose)


def test_planning_runs_in_plan_mode_and_the_execution_in_execute_mode(tmp_path: Path) -> None:
    requests: dict[str, list[CompletionRequest]] = {}
    calls: list[int] = []

    async def scenario(session: Session) -> None:
        await _plan(session, "Plan a garden party")
        calls.append(len(requests["agent-1"]))
        runs = session.state.usage.runs
        session.press("1")  # Approve
        await session.until(lambda: session.state.running, "the execution run")
        await session.finish(runs, "the execution")

    play(scenario, tmp_path, backend_factory=recording(requests))
    planning, execution = requests["agent-1"][: calls[0]], requests["agent-1"][calls[0] :]
    assert execution
    assert all(PLAN_MODE_MARKER in r.messages[0].content for r in planning)
    assert all(r.messages[0].content.startswith("[EXECUTE MODE]") for r in execution)


def test_the_dialog_takes_keys_before_it_is_first_drawn() -> None:
    from prompt_toolkit.application.current import set_app
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.key_binding import KeyPress
    from prompt_toolkit.output import DummyOutput

    from conclave.actors.planning.plan import Plan, PlanStep, plan_json
    from conclave.actors.run.result import RunResult, Termination
    from conclave.ui.repl.app import Repl
    from conclave.ui.repl.planning import PlanFlow
    from conclave.ui.repl.protocol import Submit
    from conclave.ui.repl.state import ReplState

    plan = Plan(goal="a party", steps=(PlanStep(step_number=1, action="invite"),))
    result = RunResult(
        final_answer=plan_json(plan),
        winner="a",
        presenter="a",
        strategy="winner_present",
        answers=[],
        votes={},
        rounds=1,
        llm_calls=1,
        restarts=0,
        termination=Termination.COMPLETED,
        failed_agents={},
        log_dir=None,
        duration_s=0.1,
    )

    async def main() -> list[Dialog]:
        with create_pipe_input() as keys:
            state = ReplState(agents=("a",))
            repl = Repl(state, input=keys, output=DummyOutput())
            flow = PlanFlow(repl)
            modes = attrs.evolve(state.modes, collaboration=CollaborationMode.PLAN)
            planning = Submit(task="plan", modes=modes)
            flow.turn_ended(planning, result, None)
            seen = [state.dialog]
            with set_app(repl.app):  # no frame has been drawn since the dialog opened
                repl.app.key_processor.feed(KeyPress("1"))
                repl.app.key_processor.process_keys()
            return [*seen, state.dialog]

    assert asyncio.run(main()) == [Dialog.PLAN, Dialog.NONE]
