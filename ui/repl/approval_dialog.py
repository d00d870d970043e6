"""The run approval dialog: the run the interactive agent wants to launch, and three choices.

It shows the task, the context and the agents (with the run's mode: multi or single,
refinement, planning), then Approve; Edit (a text field holding the task: Enter keeps the
edit and returns to the choices, Esc drops it); Cancel. Keys: Up/Down (or k/j) and Enter, or
1-3 directly; Esc cancels. A click on a choice chooses it.

A container, not an application: the REPL shows it in place of the input
(:mod:`ui.repl.interactive`) and focuses :attr:`ApprovalDialog.focus`;
:func:`ask_run_approval` runs it as an application of its own (tests).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from prompt_toolkit.input import Input
from prompt_toolkit.layout import Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.output import Output

from conclave.actors.human.run_approval import (
    Approved,
    RunApprovalRequest,
    RunDecision,
    RunRefused,
)
from conclave.ui.repl.choices import ChoiceCard, run_alone

__all__ = ["CANCELLED", "ApprovalChoice", "ApprovalDialog", "ask_run_approval", "describe_run"]

CANCELLED = "the person cancelled the run in the approval dialog"
"""What the agent is told when the person chooses Cancel."""


class ApprovalChoice(enum.Enum):
    APPROVE = "Approve"
    EDIT = "Edit the task"
    CANCEL = "Cancel"


_CHOICES = tuple(ApprovalChoice)
_HINT = "Up/Down + Enter, 1-3 or a click to choose; Esc cancels"
_FIELD_PROMPT = "Task (Enter keeps the edit, Esc drops it): "
_EMPTY_TASK = "The task cannot be empty; type it, or press Esc to keep the old one."
_DETAILS_HEIGHT = Dimension(min=3, max=16)


def describe_run(request: RunApprovalRequest, task: str) -> str:
    """The run as the dialog shows it."""
    if request.planning_mode:
        then = ", then execute the plan" if request.execute_after_planning else " only"
        mode = f"plan{then}"
    else:
        mode = "run"
    refinement = "refinement on" if request.refinement else "refinement off"
    lines = [
        f"Task: {task}",
        f"Context: {request.context.strip() or '(none)'}",
        f"Agents: {', '.join(request.agents)} ({request.agent_mode.value}, {refinement}, {mode})",
    ]
    return "\n".join(lines)


class ApprovalDialog(ChoiceCard):
    """The dialog's state and layout; choosing calls the ``on_decided`` callbacks once."""

    def __init__(self, request: RunApprovalRequest) -> None:
        self.request = request
        self.task = request.task
        """The task as it will run: the agent's, or the person's edit of it."""
        self.decision: RunDecision | None = None
        self.on_decided: list[Callable[[RunDecision], None]] = []
        details = Window(
            FormattedTextControl(lambda: describe_run(self.request, self.task)),
            wrap_lines=True,
            height=_DETAILS_HEIGHT,
            dont_extend_height=True,  # as tall as the run's description, up to the max
        )
        super().__init__(
            details=details, title="Launch this run?", hint=_HINT, field_prompt=_FIELD_PROMPT
        )

    def choose(self, choice: ApprovalChoice) -> None:
        self.selected = _CHOICES.index(choice)
        self.notice = ""
        if choice is ApprovalChoice.APPROVE:
            self._decide(Approved(task=self.task, context=self.request.context))
        elif choice is ApprovalChoice.CANCEL:
            self._decide(RunRefused(reason=CANCELLED))
        else:
            self.open_field(self.task)

    def _decide(self, decision: RunDecision) -> None:
        if self.decision is not None:
            return
        self.decision = decision
        for callback in self.on_decided:
            callback(decision)

    def _accept_field(self, buffer: object) -> bool:
        text = self.field.text.strip()
        if not text:
            self.notice = _EMPTY_TASK
            return True
        self.task = text
        self.back()
        self.selected = _CHOICES.index(ApprovalChoice.APPROVE)
        self.notice = "task edited: choose Approve to launch it"
        return True

    def _labels(self) -> Sequence[str]:
        return [choice.value for choice in _CHOICES]

    def _take(self, index: int) -> None:
        self.choose(_CHOICES[index])

    def _escape(self) -> None:
        self.choose(ApprovalChoice.CANCEL)


async def ask_run_approval(
    request: RunApprovalRequest, *, input: Input | None = None, output: Output | None = None
) -> RunDecision:
    """Show the dialog as an application of its own and return the decision. Ctrl+C is
    Cancel."""
    dialog = ApprovalDialog(request)
    return await run_alone(
        dialog,
        dialog.on_decided,
        interrupt=lambda: dialog.choose(ApprovalChoice.CANCEL),
        input=input,
        output=output,
    )
