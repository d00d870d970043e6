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
from collections.abc import Callable, Sequence

from prompt_toolkit.input import Input
from prompt_toolkit.layout import Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.output import Output

from conclave.actors.human.tool_approval import (
    AllowForSession,
    AllowOnce,
    Deny,
    ToolApprovalRequest,
    ToolDecision,
)
from conclave.ui.repl.choices import ChoiceCard, run_alone

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


class ToolApprovalCard(ChoiceCard):
    """The card's state and layout; choosing calls the ``on_decided`` callbacks once."""

    def __init__(self, request: ToolApprovalRequest) -> None:
        self.request = request
        self.decision: ToolDecision | None = None
        self.on_decided: list[Callable[[ToolDecision], None]] = []
        details = Window(
            FormattedTextControl(lambda: describe_call(self.request)),
            wrap_lines=True,
            height=_DETAILS_HEIGHT,
            dont_extend_height=True,
        )
        super().__init__(
            details=details,
            title=f"Allow {request.tool}?",
            hint=_HINT,
            field_prompt=_FIELD_PROMPT,
            style="class:approval",
        )

    def choose(self, choice: CardChoice) -> None:
        self.selected = _CHOICES.index(choice)
        if choice is CardChoice.ALLOW_ONCE:
            self._decide(AllowOnce())
        elif choice is CardChoice.ALLOW_SESSION:
            self._decide(AllowForSession())
        else:
            self.open_field()

    def deny(self, feedback: str = "") -> None:
        """Deny the call, the agent reading ``feedback`` (Esc, Ctrl+C, the field's Enter)."""
        self._decide(Deny(feedback=feedback))

    def _decide(self, decision: ToolDecision) -> None:
        if self.decision is not None:
            return
        self.decision = decision
        for callback in self.on_decided:
            callback(decision)

    def _labels(self) -> Sequence[str]:
        return [choice.value for choice in _CHOICES]

    def _take(self, index: int) -> None:
        self.choose(_CHOICES[index])

    def _escape(self) -> None:
        self.deny()

    def _accept_field(self, buffer: object) -> bool:
        self.deny(self.field.text.strip())
        return True


async def ask_tool_approval(
    request: ToolApprovalRequest, *, input: Input | None = None, output: Output | None = None
) -> ToolDecision:
    """Show the card as an application of its own and return the decision. Ctrl+C denies."""
    card = ToolApprovalCard(request)
    return await run_alone(card, card.on_decided, interrupt=card.deny, input=input, output=output)
