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
from collections.abc import Callable

import attrs
from prompt_toolkit.application import Application
from prompt_toolkit.application.current import get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    ConditionalContainer,
    Float,
    HSplit,
    Layout,
    Window,
)
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.mouse_events import MouseEvent, MouseEventType
from prompt_toolkit.output import Output
from prompt_toolkit.widgets import Frame, TextArea

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


class PlanDialog:
    """The dialog's state and layout. Nothing here blocks: choosing sets the decision,
    which :meth:`result` returns and ``on_decided`` callbacks receive."""

    def __init__(self, plan_text: str, *, title: str = "Proposed plan") -> None:
        self.plan_text = plan_text
        self.selected = 0
        self.editing: Choice | None = None
        self.notice = ""
        self.decision: PlanDecision | None = None
        self.on_decided: list[Callable[[PlanDecision], None]] = []
        self._future: asyncio.Future[PlanDecision] | None = None
        self._lines = plan_text.splitlines()
        self.scroll = 0
        """The first line of the plan shown (PgUp/PgDn move it)."""

        plan_window = Window(
            FormattedTextControl(lambda: "\n".join(self._lines[self.scroll :])),
            wrap_lines=True,
            height=_PLAN_HEIGHT,
        )
        self.focus = Window(
            FormattedTextControl(self._choice_fragments, focusable=True, show_cursor=False),
            height=len(_CHOICES),
        )
        """What the host focuses when it shows the dialog."""
        self.field = TextArea(multiline=False, accept_handler=self._accept_field)
        editing = Condition(lambda: self.editing is not None)
        field_row = HSplit(
            [
                Window(FormattedTextControl(self._field_prompt), height=1),
                self.field,
            ]
        )
        self.container = Frame(
            HSplit(
                [
                    plan_window,
                    Window(height=1, char="─"),
                    self.focus,
                    ConditionalContainer(field_row, filter=editing),
                    Window(FormattedTextControl(self._notice), height=1, style="class:hint"),
                ],
                key_bindings=self._key_bindings(editing),
            ),
            title=title,
        )
        """The dialog: the plan, the choices, the text field while one is open, a hint."""

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
            self.editing = choice
            self.field.text = ""
            _focus(self.field)

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

    def _back(self) -> None:
        self.editing = None
        self.notice = ""
        _focus(self.focus)

    def _choice_fragments(self) -> StyleAndTextTuples:
        fragments: StyleAndTextTuples = []
        for index, choice in enumerate(_CHOICES):
            marker = ">" if index == self.selected else " "
            style = "class:selected reverse" if index == self.selected else ""
            fragments.append(
                (style, f"{marker} {index + 1}. {choice.value}\n", self._click_handler(choice))
            )
        return fragments

    def _click_handler(self, choice: Choice) -> Callable[[MouseEvent], None]:
        def handler(event: MouseEvent) -> None:
            if event.event_type is MouseEventType.MOUSE_UP:
                self.choose(choice)

        return handler

    def _field_prompt(self) -> str:
        return _FIELD_PROMPTS.get(self.editing, "") if self.editing else ""

    def _notice(self) -> str:
        return self.notice or _HINT

    def _key_bindings(self, editing: Condition) -> KeyBindings:
        bindings = KeyBindings()
        choosing = ~editing

        @bindings.add("up", filter=choosing)
        @bindings.add("k", filter=choosing)
        def _up(event: KeyPressEvent) -> None:
            self.selected = (self.selected - 1) % len(_CHOICES)

        @bindings.add("down", filter=choosing)
        @bindings.add("j", filter=choosing)
        @bindings.add("tab", filter=choosing)
        def _down(event: KeyPressEvent) -> None:
            self.selected = (self.selected + 1) % len(_CHOICES)

        @bindings.add("enter", filter=choosing)
        def _enter(event: KeyPressEvent) -> None:
            self.choose(_CHOICES[self.selected])

        for index, choice in enumerate(_CHOICES):
            bindings.add(str(index + 1), filter=choosing)(_chooser(self, choice))

        @bindings.add("escape", filter=choosing)
        def _escape(event: KeyPressEvent) -> None:
            self.choose(Choice.CANCEL)

        @bindings.add("escape", filter=editing)
        def _escape_field(event: KeyPressEvent) -> None:
            self._back()

        @bindings.add("pageup")
        def _page_up(event: KeyPressEvent) -> None:
            self.scroll = max(0, self.scroll - _PAGE)

        @bindings.add("pagedown")
        def _page_down(event: KeyPressEvent) -> None:
            self.scroll = max(0, min(self.scroll + _PAGE, len(self._lines) - 1))

        return bindings


def _chooser(dialog: PlanDialog, choice: Choice) -> Callable[[KeyPressEvent], None]:
    def choose(event: KeyPressEvent) -> None:
        dialog.choose(choice)

    return choose


def _focus(target: Window | TextArea) -> None:
    """Focus ``target`` in the running application's layout (a no-op when it is not there,
    e.g. a dialog driven without an application)."""
    layout = get_app().layout
    try:
        layout.focus(target)
    except ValueError:
        return


async def ask_plan_decision(
    plan_text: str, *, input: Input | None = None, output: Output | None = None
) -> PlanDecision:
    """Show the dialog as an application of its own and return the decision. Ctrl+C is
    Cancel. On the asyncio loop; cancelling the wait exits the application."""
    dialog = PlanDialog(plan_text)
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        dialog.choose(Choice.CANCEL)

    app: Application[PlanDecision] = Application(
        layout=Layout(dialog.container, focused_element=dialog.focus),
        key_bindings=bindings,
        mouse_support=True,
        full_screen=False,
        input=input,
        output=output,
    )
    dialog.on_decided.append(lambda decision: app.exit(result=decision))
    return await app.run_async()
