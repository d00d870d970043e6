"""An executing plan's progress: the run says the steps as it starts, ``update_plan`` marks
one and says every step after the change, a step the plan lacks is a tool error the model
reads; the run's view and the REPL's step list show the latest."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from conclave.actors.events.view import RunView
from conclave.actors.planning.flow import execution_task
from conclave.actors.planning.plan import Plan, PlanStep
from conclave.actors.planning.progress import (
    PlanExecutionStarted,
    PlanStepUpdated,
    StepProgress,
    StepStatus,
)
from conclave.config.schema import AgentConfig, ConclaveConfig
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.repl.live import LiveRun
from conclave.ui.repl.plan_steps import plan_steps_text, shows_plan_steps
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import ReplState
from tests.cli.helpers import write_config

PLAN = Plan(
    goal="Write the docs",
    steps=(
        PlanStep(step_number=1, action="Write the guide"),
        PlanStep(step_number=2, action="Check it"),
    ),
)


def _mark(step: int, status: str) -> dict[str, Any]:
    return {"tool": "update_plan", "arguments": {"step_number": step, "status": status}}


def _events(
    tmp_path: Path, task: str, steps: list[dict[str, Any]], *, tools: bool = True
) -> list[dict[str, Any]]:
    config = write_config(
        tmp_path / "c.yaml", [{"id": "a1", "latency": 0, "tool_steps": steps}], tools=tools
    )
    log = tmp_path / "log"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["run", "--config", str(config), "--log-dir", str(log), task])
    assert code == ExitCode.OK, err.getvalue()
    lines = (log / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _statuses(event: dict[str, Any]) -> list[str]:
    return [step["status"] for step in event["steps"]]


def test_an_executing_plan_says_its_steps_then_each_mark(tmp_path: Path) -> None:
    steps = [_mark(1, "in_progress"), _mark(1, "done"), _mark(2, "in_progress")]
    events = _events(tmp_path, execution_task(PLAN, ""), steps)

    [started] = [e for e in events if e["kind"] == "plan_execution_started"]
    updates = [e for e in events if e["kind"] == "plan_step_updated"]
    assert _statuses(started) == ["pending", "pending"]
    assert [_statuses(e) for e in updates] == [
        ["in_progress", "pending"],
        ["done", "pending"],
        ["done", "in_progress"],
    ]
    assert {e["agent"] for e in updates} == {"a1"}


def test_a_step_the_plan_lacks_is_a_tool_error_the_model_reads(tmp_path: Path) -> None:
    events = _events(tmp_path, execution_task(PLAN, ""), [_mark(9, "done")])

    [finished] = [e for e in events if e["kind"] == "tool_call_finished"]
    assert finished["error"] == "the plan has no step 9; its steps are 1, 2"
    assert not [e for e in events if e["kind"] == "plan_step_updated"]


def test_a_run_that_executes_no_plan_offers_no_update_plan(tmp_path: Path) -> None:
    events = _events(tmp_path, "Write the docs", [_mark(1, "done")])

    assert not [e for e in events if e["kind"].startswith("plan_")]
    # The scripted agent makes only steps whose tool is offered.
    assert not [e for e in events if e["kind"] == "tool_call_finished"]


def _view_after(*steps: tuple[StepProgress, ...]) -> RunView:
    view = RunView()
    view.apply(PlanExecutionStarted(at=1.0, goal="g", steps=steps[0]))
    for later in steps[1:]:
        view.apply(
            PlanStepUpdated(at=2.0, agent="a1", step_number=1, status=later[0].status, steps=later)
        )
    return view


STARTED = (
    StepProgress(step_number=1, action="Write the guide"),
    StepProgress(step_number=2, action="Check it"),
)
MARKED = (
    StepProgress(step_number=1, action="Write the guide", status=StepStatus.DONE),
    StepProgress(step_number=2, action="Check it", status=StepStatus.IN_PROGRESS),
)


def test_the_view_holds_the_steps_as_the_latest_event_says() -> None:
    assert _view_after(STARTED).plan_steps == STARTED
    assert _view_after(STARTED, MARKED).plan_steps == MARKED


def _live_after(*steps: tuple[StepProgress, ...]) -> LiveRun:
    live = LiveRun(ConclaveConfig(agents=(AgentConfig(id="a1"),)))
    live.apply(PlanExecutionStarted(at=1.0, goal="g", steps=steps[0]))
    for later in steps[1:]:
        live.apply(
            PlanStepUpdated(at=2.0, agent="a1", step_number=1, status=later[0].status, steps=later)
        )
    return live


def test_the_repl_lists_the_steps_with_their_marks_while_the_run_is_on_screen() -> None:
    state = ReplState(agents=("a1",))
    state.live = _live_after(STARTED, MARKED).snapshot()
    assert not shows_plan_steps(state)
    state.running = True
    assert shows_plan_steps(state)
    assert fragments_text(plan_steps_text(state)).splitlines() == [
        "Plan: 1/2 done",
        "  [x] 1. Write the guide",
        "  [>] 2. Check it",
    ]


def test_the_step_list_shows_the_snapshot_not_the_run_moving_on() -> None:
    live = _live_after(STARTED)
    state = ReplState(agents=("a1",), running=True)
    state.live = live.snapshot()
    live.apply(
        PlanStepUpdated(at=2.0, agent="a1", step_number=1, status=StepStatus.DONE, steps=MARKED)
    )
    assert "[ ] 1. Write the guide" in fragments_text(plan_steps_text(state))
    state.live = live.snapshot()
    assert "[x] 1. Write the guide" in fragments_text(plan_steps_text(state))


def test_a_scripted_agent_walks_the_plan_it_executes_step_by_step(tmp_path: Path) -> None:
    events = _events(tmp_path, execution_task(PLAN, ""), [])

    updates = [e for e in events if e["kind"] == "plan_step_updated"]
    assert [(e["step_number"], e["status"]) for e in updates] == [
        (1, "in_progress"),
        (1, "done"),
        (2, "in_progress"),
        (2, "done"),
    ]


def test_an_agent_without_tools_is_offered_update_plan_alone_while_executing(
    tmp_path: Path,
) -> None:
    events = _events(tmp_path, execution_task(PLAN, ""), [], tools=False)

    assert [e["tool"] for e in events if e["kind"] == "tool_call_finished"] == ["update_plan"] * 4
    assert _statuses([e for e in events if e["kind"] == "plan_step_updated"][-1]) == [
        "done",
        "done",
    ]
