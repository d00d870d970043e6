"""Terminals: what decides that a reply ends a loop.

The engine asks its terminal about every reply. A terminal answers with one of three verdicts:
``Final`` (the loop ends with this reply), ``Proceed`` (execute the reply's tool calls and take
another step) or ``Violation`` (the reply broke the contract: the error goes back to the model
and the attempt counts as a failed try). Terminals are pure: no I/O, no state.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

import attrs

from conclave.actors.llm.protocol import ChatMessage, ToolCall, ToolSchema

__all__ = [
    "Final",
    "Proceed",
    "Terminal",
    "TextTerminal",
    "ToolTerminal",
    "Verdict",
    "Violation",
]

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class Final(Generic[T]):
    """The reply ends the loop; ``value`` is what the terminal made of it."""

    value: T


@attrs.frozen(kw_only=True)
class Proceed:
    """The reply calls tools the loop offers: run them and take another step."""


@attrs.frozen(kw_only=True)
class Violation:
    """The reply broke the terminal's contract; ``error`` is shown to the model."""

    error: str


Verdict = Final[T] | Proceed | Violation


class Terminal(Protocol[T]):
    def judge(
        self, reply: ChatMessage, offered: tuple[ToolSchema, ...]
    ) -> Final[T] | Proceed | Violation:
        """Decide what ``reply`` means, given the tools offered for the step."""
        ...


def unoffered(calls: tuple[ToolCall, ...], offered: tuple[ToolSchema, ...]) -> ToolCall | None:
    """The first call to a tool that was not offered, if any."""
    names = {t.name for t in offered}
    return next((c for c in calls if c.name not in names), None)


def not_offered_error(call: ToolCall, offered: tuple[ToolSchema, ...]) -> str:
    names = ", ".join(t.name for t in offered) or "none"
    return f"Tool {call.name!r} is not available now; the available tools are: {names}."


@attrs.frozen
class TextTerminal:
    """A reply without tool calls is final (presentation, the interactive agent, sub-agents).

    Its value is the reply's text. An empty reply is a violation: a final answer must say
    something.
    """

    def judge(
        self, reply: ChatMessage, offered: tuple[ToolSchema, ...]
    ) -> Final[str] | Proceed | Violation:
        if reply.tool_calls:
            stray = unoffered(reply.tool_calls, offered)
            if stray is not None:
                return Violation(error=not_offered_error(stray, offered))
            return Proceed()
        if not reply.content.strip():
            return Violation(error="The reply was empty; reply with the text asked for.")
        return Final(value=reply.content)


@attrs.frozen
class ToolTerminal:
    """A call to the tool ``name`` is final (``submit_plan``, ``reflect``, ``ask_user``).

    The call must stand alone in its reply, so no other tool's effect is lost. A reply
    without tool calls is a violation that names the tool to call.
    """

    name: str

    def judge(
        self, reply: ChatMessage, offered: tuple[ToolSchema, ...]
    ) -> Final[ToolCall] | Proceed | Violation:
        calls = reply.tool_calls
        if not calls:
            return Violation(error=f"End this turn by calling {self.name}; you called no tool.")
        stray = unoffered(calls, offered)
        if stray is not None:
            return Violation(error=not_offered_error(stray, offered))
        finals = [c for c in calls if c.name == self.name]
        if not finals:
            return Proceed()
        if len(calls) > 1:
            return Violation(
                error=f"Call {self.name} alone in its reply; you made {len(calls)} tool calls."
            )
        return Final(value=finals[0])
