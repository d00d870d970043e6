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
from collections.abc import Callable

from prompt_toolkit.application import Application
from prompt_toolkit.application.current import get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.mouse_events import MouseEvent, MouseEventType
from prompt_toolkit.output import Output
from prompt_toolkit.widgets import Frame, TextArea

from conclave.actors.human.run_approval import (
    Approved,
    RunApprovalRequest,
    RunDecision,
    RunRefused,
)

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


class ApprovalDialog:
    """The dialog's state and layout; choosing calls the ``on_decided`` callbacks once."""

    def __init__(self, request: RunApprovalRequest) -> None:
        self.request = request
        self.task = request.task
        """The task as it will run: the agent's, or the person's edit of it."""
        self.selected = 0
        self.editing = False
        self.notice = ""
        self.decision: RunDecision | None = None
        self.on_decided: list[Callable[[RunDecision], None]] = []
        details = Window(
            FormattedTextControl(lambda: describe_run(self.request, self.task)),
            wrap_lines=True,
            height=_DETAILS_HEIGHT,
            dont_extend_height=True,  # as tall as the run's description, up to the max
        )
        self.focus = Window(
            FormattedTextControl(self._choice_fragments, focusable=True, show_cursor=False),
            height=len(_CHOICES),
        )
        """What the host focuses when it shows the dialog."""
        self.field = TextArea(multiline=False, accept_handler=self._accept_field)
        editing = Condition(lambda: self.editing)
        field_row = HSplit([Window(FormattedTextControl(_FIELD_PROMPT), height=1), self.field])
        self.container = Frame(
            HSplit(
                [
                    details,
                    Window(height=1, char="─"),
                    self.focus,
                    ConditionalContainer(field_row, filter=editing),
                    Window(FormattedTextControl(self._notice), height=1, style="class:hint"),
                ],
                key_bindings=self._key_bindings(editing),
            ),
            title="Launch this run?",
        )

    def choose(self, choice: ApprovalChoice) -> None:
        self.selected = _CHOICES.index(choice)
        self.notice = ""
        if choice is ApprovalChoice.APPROVE:
            self._decide(Approved(task=self.task, context=self.request.context))
        elif choice is ApprovalChoice.CANCEL:
            self._decide(RunRefused(reason=CANCELLED))
        else:
            self.editing = True
            self.field.text = self.task
            self.field.buffer.cursor_position = len(self.task)
            _focus(self.field)

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
        self._back()
        self.selected = _CHOICES.index(ApprovalChoice.APPROVE)
        self.notice = "task edited: choose Approve to launch it"
        return True

    def _back(self) -> None:
        self.editing = False
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

    def _click_handler(self, choice: ApprovalChoice) -> Callable[[MouseEvent], None]:
        def handler(event: MouseEvent) -> None:
            if event.event_type is MouseEventType.MOUSE_UP:
                self.choose(choice)

        return handler

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
            self.choose(ApprovalChoice.CANCEL)

        @bindings.add("escape", filter=editing)
        def _escape_field(event: KeyPressEvent) -> None:
            self.notice = ""
            self._back()

        return bindings


def _chooser(dialog: ApprovalDialog, choice: ApprovalChoice) -> Callable[[KeyPressEvent], None]:
    def choose(event: KeyPressEvent) -> None:
        dialog.choose(choice)

    return choose


def _focus(target: Window | TextArea) -> None:
    """Focus ``target`` in the running application's layout (a no-op outside one)."""
    try:
        get_app().layout.focus(target)
    except ValueError:
        return


async def ask_run_approval(
    request: RunApprovalRequest, *, input: Input | None = None, output: Output | None = None
) -> RunDecision:
    """Show the dialog as an application of its own and return the decision. Ctrl+C is
    Cancel."""
    dialog = ApprovalDialog(request)
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        dialog.choose(ApprovalChoice.CANCEL)

    app: Application[RunDecision] = Application(
        layout=Layout(dialog.container, focused_element=dialog.focus),
        key_bindings=bindings,
        mouse_support=True,
        full_screen=False,
        input=input,
        output=output,
    )
    dialog.on_decided.append(lambda decision: app.exit(result=decision))
    return await app.run_async()
