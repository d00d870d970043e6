"""The plan approval dialog: the proposed plan, rendered, and four choices.

Approve; Approve with additional instructions (a text field); Revise with feedback (a text
field); Cancel. Keys: Up/Down (or k/j) and Enter, or 1-4 directly; Esc cancels (in a text
field, Esc goes back to the choices); Enter in a text field submits it. A mouse click on a
choice chooses it. PageUp/PageDown scroll a long plan.

The dialog is a container, not an application: the REPL floats it over its own layout
(:meth:`PlanDialog.float`), focuses :attr:`PlanDialog.focus`, and awaits
:meth:`PlanDialog.result` on prompt-toolkit's asyncio loop. :func:`ask_plan_decision` runs
it as an application of its own (tests, and anything without a layout to float it in).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Sequence

import attrs
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyPressEvent
from prompt_toolkit.layout import Float, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.output import Output

from conclave.ui.repl.choices import ChoiceCard, run_alone

__all__ = [
    "Approve",
    "Cancel",
    "Choice",
    "PlanDecision",
    "PlanDialog",
    "Revise",
    "ask_plan_decision",
]


@attrs.frozen(kw_only=True)
class Approve:
    """Execute the plan, with the person's additional instructions ("" when none)."""

    additions: str = ""


@attrs.frozen(kw_only=True)
class Revise:
    """Plan again, with the plan and this feedback in the history."""

    feedback: str


@attrs.frozen(kw_only=True)
class Cancel:
    """Neither execute nor revise: the plan is dropped (it stays saved)."""


PlanDecision = Approve | Revise | Cancel


class Choice(enum.Enum):
    APPROVE = "Approve"
    APPROVE_WITH = "Approve with additional instructions"
    REVISE = "Revise with feedback"
    CANCEL = "Cancel"


_CHOICES = tuple(Choice)
_FIELD_PROMPTS = {
    Choice.APPROVE_WITH: "Additional instructions (Enter to approve, Esc to go back): ",
    Choice.REVISE: "Feedback (Enter to revise, Esc to go back): ",
}
_HINT = "Up/Down + Enter, 1-4 or a click to choose; Esc cancels; PgUp/PgDn scroll the plan"
_EMPTY_FEEDBACK = "Type your feedback first, or press Esc to go back to the choices."
_PLAN_HEIGHT = Dimension(min=3, max=20, preferred=20)
_PAGE = 10
"""Plan lines a PgUp/PgDn moves by."""


class PlanDialog(ChoiceCard):
    """The dialog's state and layout. Nothing here blocks: choosing sets the decision,
    which :meth:`result` returns and ``on_decided`` callbacks receive."""

    def __init__(self, plan_text: str, *, title: str = "Proposed plan") -> None:
        self.plan_text = plan_text
        self.decision: PlanDecision | None = None
        self.on_decided: list[Callable[[PlanDecision], None]] = []
        self._future: asyncio.Future[PlanDecision] | None = None
        self._field_choice = Choice.APPROVE_WITH
        self._lines = plan_text.splitlines()
        self.scroll = 0
        """The first line of the plan shown (PgUp/PgDn move it)."""

        plan_window = Window(
            FormattedTextControl(lambda: "\n".join(self._lines[self.scroll :])),
            wrap_lines=True,
            height=_PLAN_HEIGHT,
        )
        super().__init__(
            details=plan_window, title=title, hint=_HINT, field_prompt=self._field_prompt
        )

        @self.bindings.add("pageup")
        def _page_up(event: KeyPressEvent) -> None:
            self.scroll = max(0, self.scroll - _PAGE)

        @self.bindings.add("pagedown")
        def _page_down(event: KeyPressEvent) -> None:
            self.scroll = max(0, min(self.scroll + _PAGE, len(self._lines) - 1))

    @property
    def editing(self) -> Choice | None:
        """The choice whose text field is open, if one is."""
        return self._field_choice if self.field_open else None

    def float(self) -> Float:
        """The dialog as a float to add to the host's ``FloatContainer``."""
        return Float(content=self.container, left=2, right=2, top=1)

    async def result(self) -> PlanDecision:
        """Wait for the person's decision (on the asyncio loop hosting the UI). Cancelling
        this wait leaves the dialog undecided; the host removes it."""
        if self.decision is not None:
            return self.decision
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return await asyncio.shield(self._future)

    def choose(self, choice: Choice) -> None:
        """Act on a choice: decide at once, or open its text field."""
        self.selected = _CHOICES.index(choice)
        self.notice = ""
        if choice is Choice.APPROVE:
            self._decide(Approve())
        elif choice is Choice.CANCEL:
            self._decide(Cancel())
        else:
            self._field_choice = choice
            self.open_field("")

    def _decide(self, decision: PlanDecision) -> None:
        if self.decision is not None:
            return
        self.decision = decision
        if self._future is not None and not self._future.done():
            self._future.set_result(decision)
        for callback in self.on_decided:
            callback(decision)

    def _accept_field(self, buffer: object) -> bool:
        text = self.field.text.strip()
        if self.editing is Choice.APPROVE_WITH:
            self._decide(Approve(additions=text))
        elif self.editing is Choice.REVISE:
            if not text:
                self.notice = _EMPTY_FEEDBACK
                return True  # keep the field open, and its (empty) text
            self._decide(Revise(feedback=text))
        return True

    def _field_prompt(self) -> str:
        return _FIELD_PROMPTS.get(self.editing, "") if self.editing else ""

    def _labels(self) -> Sequence[str]:
        return [choice.value for choice in _CHOICES]

    def _take(self, index: int) -> None:
        self.choose(_CHOICES[index])

    def _escape(self) -> None:
        self.choose(Choice.CANCEL)


async def ask_plan_decision(
    plan_text: str, *, input: Input | None = None, output: Output | None = None
) -> PlanDecision:
    """Show the dialog as an application of its own and return the decision. Ctrl+C is
    Cancel. On the asyncio loop; cancelling the wait exits the application."""
    dialog = PlanDialog(plan_text)
    return await run_alone(
        dialog,
        dialog.on_decided,
        interrupt=lambda: dialog.choose(Choice.CANCEL),
        input=input,
        output=output,
    )
