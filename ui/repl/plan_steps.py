"""The live step list while a plan executes: each step of the approved plan with its status,
as the run's latest ``plan_execution_started`` / ``plan_step_updated`` event left it
(:attr:`actors.events.view.RunView.plan_steps`), above the progress lines.

Drawn on the UI's thread from the screen's latest snapshot (:mod:`ui.repl.live`): the steps
are an immutable tuple the snapshot's view shares, never the run's live view."""

from __future__ import annotations

from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.planning.progress import StepStatus
from conclave.ui.repl.state import ReplState

__all__ = ["MARKS", "plan_steps_text", "shows_plan_steps"]

MARKS = {StepStatus.PENDING: "[ ]", StepStatus.IN_PROGRESS: "[>]", StepStatus.DONE: "[x]"}
_STYLES = {
    StepStatus.PENDING: "class:plan.pending",
    StepStatus.IN_PROGRESS: "class:plan.active",
    StepStatus.DONE: "class:plan.done",
}


def shows_plan_steps(state: ReplState) -> bool:
    """Whether the list is shown: a run that executes a plan is on screen."""
    return state.running and state.view is not None and bool(state.view.plan_steps)


def plan_steps_text(state: ReplState) -> StyleAndTextTuples:
    view = state.view
    if view is None:
        return []
    steps = view.plan_steps
    done = sum(step.status is StepStatus.DONE for step in steps)
    fragments: StyleAndTextTuples = [("class:plan.head", f"Plan: {done}/{len(steps)} done\n")]
    for step in steps:
        line = f"  {MARKS[step.status]} {step.step_number}. {step.action}\n"
        fragments.append((_STYLES[step.status], line))
    return fragments
