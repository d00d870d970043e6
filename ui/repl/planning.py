"""Plan mode's flow in the REPL: a planning turn's plan, the approval dialog, and what the
person's decision starts.

When a plan-mode turn ends with an answer that parses as a plan
(:func:`actors.planning.plan.parse_plan`), the plan is saved (``plans/plan-vN.json`` under
the log directory of the turn that began the planning, so revisions count up) and the
approval dialog (:mod:`ui.repl.plan_dialog`) takes the input's place:

- Approve (with or without additional instructions): an execution turn in the ``execute``
  collaboration mode runs :func:`~actors.planning.flow.execution_task`, shown as
  "Executing plan" until it ends; plan mode is switched off.
- Revise with feedback: planning runs again, its history holding the plan (the planning
  turn's answer) and the feedback as the new task; each plan is a message of its own.
- Cancel: back to the prompt; the plan stays saved.

An answer that is not a plan was already shown as text, and nothing more happens.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from conclave.actors.planning.flow import PlanStore, execution_task, revision_task
from conclave.actors.planning.plan import Plan, parse_plan, plan_json, render_plan
from conclave.actors.run.result import RunResult, Termination
from conclave.config.modes import CollaborationMode
from conclave.ui.repl.plan_dialog import Approve, Choice, PlanDecision, PlanDialog, Revise
from conclave.ui.repl.protocol import Submit
from conclave.ui.repl.service import ReplService
from conclave.ui.repl.state import Dialog
from conclave.ui.text import display_path

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = ["EXECUTING", "PlanFlow", "attach_plans"]

EXECUTING = "Executing plan"


def attach_plans(repl: Repl, service: ReplService) -> None:
    flow = PlanFlow(repl, service)
    service.plans = flow
    repl.plans = flow


class PlanFlow:
    """See the module docstring; one per session."""

    def __init__(self, repl: Repl, service: ReplService | None = None) -> None:
        self.repl = repl
        self._service = service
        """Whose session records the plans and decisions (``None``: nobody's)."""
        self.dialog: PlanDialog | None = None
        self._store: PlanStore | None = None
        self._revising = False

    def shown(self, result: RunResult) -> str | None:
        """A plan answer as the dialog shows it; the JSON stays in the log and the file."""
        plan = parse_plan(result.final_answer) if result.final_answer is not None else None
        return render_plan(plan) if plan is not None else None

    def turn_ended(self, submit: Submit, result: RunResult, log_dir: Path | None) -> None:
        """A plan-mode turn ended: open the dialog if its answer is a plan."""
        revising, self._revising = self._revising, False
        answer = result.final_answer
        if answer is None or result.termination is not Termination.COMPLETED:
            return
        plan = parse_plan(answer)
        if plan is None:
            self.repl.say("the answer is not a plan (shown above as text)")
            return
        if not revising or self._store is None:
            self._store = PlanStore(log_dir) if log_dir is not None else None
        saved = self._save(plan)
        sessions = self._service.sessions if self._service is not None else None
        if sessions is not None:
            proposed, run_id = plan_json(plan), log_dir.name if log_dir else ""
            self.repl.on_runtime(lambda: sessions.plan_proposed(proposed, run_id=run_id))
        self._open(plan, saved)

    def _save(self, plan: Plan) -> Path | None:
        if self._store is None:
            self.repl.say("the plan is not saved: this run kept no log directory")
            return None
        try:
            path = self._store.save(plan)
        except OSError as exc:
            self.repl.error(f"the plan could not be saved ({exc.strerror or exc})")
            return None
        self.repl.say(f"plan saved to {display_path(path)}")
        return path

    def _open(self, plan: Plan, saved: Path | None) -> None:
        repl = self.repl
        dialog = PlanDialog(render_plan(plan))
        dialog.on_decided.append(lambda decision: self._decided(plan, saved, decision))
        self.dialog = dialog
        repl.plan_container = dialog.container
        repl.state.dialog = Dialog.PLAN
        # prompt-toolkit finds a focused window's key bindings through its parents, known
        # from the last frame; a key before the next frame would miss the dialog's (and
        # the miss is cached for the dialog's life). Learn the parents now.
        repl.app.layout.update_parents_relations()
        repl.app.layout.focus(dialog.focus)
        repl.state.on_change()

    def cancel(self) -> None:
        """Ctrl+C in the dialog: as its Cancel."""
        if self.dialog is not None:
            self.dialog.choose(Choice.CANCEL)

    def _decided(self, plan: Plan, saved: Path | None, decision: PlanDecision) -> None:
        repl, state = self.repl, self.repl.state
        self.dialog = None
        repl.plan_container = None
        state.dialog = Dialog.NONE
        repl.app.layout.focus(repl.buffer)
        where = f" (saved at {display_path(saved)})" if saved is not None else ""
        sessions = self._service.sessions if self._service is not None else None
        if sessions is not None:
            self.repl.on_runtime(lambda: sessions.plan_decided(decision))
        if isinstance(decision, Approve):
            state.set_collaboration(CollaborationMode.DEFAULT)
            additions = decision.additions.strip()
            shown = "Execute the approved plan" + (f", and: {additions}" if additions else "")
            repl.say(f"{EXECUTING}{where}")
            repl.send(
                Submit(
                    task=execution_task(plan, additions),
                    modes=attrs.evolve(state.modes, collaboration=CollaborationMode.EXECUTE),
                    status=EXECUTING,
                    shown_task=shown,
                )
            )
        elif isinstance(decision, Revise):
            self._revising = True
            repl.send(
                Submit(
                    task=revision_task(decision.feedback),
                    modes=attrs.evolve(state.modes, collaboration=CollaborationMode.PLAN),
                    status="Revising the plan",
                    shown_task=f"Revise the plan: {decision.feedback.strip()}",
                )
            )
        else:
            repl.say(f"plan cancelled{where}")
        state.on_change()
