"""The tool approval card: a call the permission mode says must ask, and three choices.

It shows who calls what (the agent, the tool, the path or command, why it asks, the
arguments), then Allow once; Allow for this session (the same command exactly, or any call
of another tool, runs without asking until the REPL ends); Deny with feedback (a text field:
Enter denies with what was typed, which the agent reads as the call's result; Esc goes back
to the choices). Keys: Up/Down (or k/j) and Enter, or 1-3 directly; Esc denies. A click on a
choice chooses it.

A container, not an application: the REPL shows it in the input's place
(:mod:`ui.repl.tool_approvals`) and focuses :attr:`ToolApprovalCard.focus`;
:func:`ask_tool_approval` runs it as an application of its own (tests).
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

from conclave.actors.human.tool_approval import (
    AllowForSession,
    AllowOnce,
    Deny,
    ToolApprovalRequest,
    ToolDecision,
)

__all__ = ["CardChoice", "ToolApprovalCard", "ask_tool_approval", "describe_call"]


class CardChoice(enum.Enum):
    ALLOW_ONCE = "Allow once"
    ALLOW_SESSION = "Allow for this session"
    DENY = "Deny with feedback"


_CHOICES = tuple(CardChoice)
_HINT = "Up/Down + Enter, 1-3 or a click to choose; Esc denies"
_FIELD_PROMPT = "Feedback for the agent (Enter denies, Esc goes back): "
_DETAILS_HEIGHT = Dimension(min=3, max=12)
_ARGUMENTS_SHOWN = 400
"""Characters of the arguments shown (a write's whole content would push the choices away)."""


def describe_call(request: ToolApprovalRequest) -> str:
    """The call as the card shows it."""
    arguments = request.arguments
    if len(arguments) > _ARGUMENTS_SHOWN:
        arguments = arguments[:_ARGUMENTS_SHOWN] + f"… ({len(request.arguments):,} characters)"
    lines = [f"{request.agent} wants to call {request.tool}", f"Why it asks: {request.reason}"]
    if request.subject is not None:
        lines.append(f"Touches: {request.subject}")
    lines.append(f"Arguments: {arguments}")
    return "\n".join(lines)


class ToolApprovalCard:
    """The card's state and layout; choosing calls the ``on_decided`` callbacks once."""

    def __init__(self, request: ToolApprovalRequest) -> None:
        self.request = request
        self.selected = 0
        self.editing = False
        self.decision: ToolDecision | None = None
        self.on_decided: list[Callable[[ToolDecision], None]] = []
        details = Window(
            FormattedTextControl(lambda: describe_call(self.request)),
            wrap_lines=True,
            height=_DETAILS_HEIGHT,
            dont_extend_height=True,
        )
        self.focus = Window(
            FormattedTextControl(self._choice_fragments, focusable=True, show_cursor=False),
            height=len(_CHOICES),
        )
        """What the host focuses when it shows the card."""
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
                    Window(FormattedTextControl(_HINT), height=1, style="class:hint"),
                ],
                key_bindings=self._key_bindings(editing),
            ),
            title=f"Allow {request.tool}?",
            style="class:approval",
        )

    def choose(self, choice: CardChoice) -> None:
        self.selected = _CHOICES.index(choice)
        if choice is CardChoice.ALLOW_ONCE:
            self._decide(AllowOnce())
        elif choice is CardChoice.ALLOW_SESSION:
            self._decide(AllowForSession())
        else:
            self.editing = True
            _focus(self.field)

    def deny(self, feedback: str = "") -> None:
        """Deny the call, the agent reading ``feedback`` (Esc, Ctrl+C, the field's Enter)."""
        self._decide(Deny(feedback=feedback))

    def _decide(self, decision: ToolDecision) -> None:
        if self.decision is not None:
            return
        self.decision = decision
        for callback in self.on_decided:
            callback(decision)

    def _accept_field(self, buffer: object) -> bool:
        self.deny(self.field.text.strip())
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

    def _click_handler(self, choice: CardChoice) -> Callable[[MouseEvent], None]:
        def handler(event: MouseEvent) -> None:
            if event.event_type is MouseEventType.MOUSE_UP:
                self.choose(choice)

        return handler

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
            self.deny()

        @bindings.add("escape", filter=editing)
        def _escape_field(event: KeyPressEvent) -> None:
            self._back()

        return bindings


def _chooser(card: ToolApprovalCard, choice: CardChoice) -> Callable[[KeyPressEvent], None]:
    def choose(event: KeyPressEvent) -> None:
        card.choose(choice)

    return choose


def _focus(target: Window | TextArea) -> None:
    """Focus ``target`` in the running application's layout (a no-op outside one)."""
    try:
        get_app().layout.focus(target)
    except ValueError:
        return


async def ask_tool_approval(
    request: ToolApprovalRequest, *, input: Input | None = None, output: Output | None = None
) -> ToolDecision:
    """Show the card as an application of its own and return the decision. Ctrl+C denies."""
    card = ToolApprovalCard(request)
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        card.deny()

    app: Application[ToolDecision] = Application(
        layout=Layout(card.container, focused_element=card.focus),
        key_bindings=bindings,
        mouse_support=True,
        full_screen=False,
        input=input,
        output=output,
    )
    card.on_decided.append(lambda decision: app.exit(result=decision))
    return await app.run_async()
