"""Events of an agent's LLM loop: streamed text, retries, tool calls.

Tool arguments are cut to :data:`PREVIEW_BYTES` by the classes themselves: a model may send
megabytes of them, and the transcript keeps them whole. A call's output and error are kept
whole: they are what the model was shown, already capped by the executor
(``max_output_bytes``), and ``conclave replay --verbose`` shows them in full. Subscribers in
the process share the one string; the event log writes a long output once (see
:mod:`runtime.eventlog_texts`).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from conclave.actors.events.base import DomainEvent
from conclave.runtime import message

__all__ = [
    "PREVIEW_BYTES",
    "LlmRetry",
    "LlmTryFailed",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "clip",
]

PREVIEW_BYTES = 2048
"""The most UTF-8 bytes of a tool call's arguments or output an event carries."""


def clip(text: str) -> str:
    """``text`` if it fits in :data:`PREVIEW_BYTES` UTF-8 bytes, else its head and a marker
    saying how long it was, together within that. Idempotent, so decoding a clipped event
    gives back the same event."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= PREVIEW_BYTES:
        return text
    marker = f"…[{len(data)} bytes, cut]"
    room = PREVIEW_BYTES - len(marker.encode("utf-8"))
    # Cut at a character boundary: drop a multi-byte sequence split by the cut.
    head = data[:room].decode("utf-8", "ignore")
    return head + marker


@message()
class TextDelta(DomainEvent):
    """Text the model streamed since the agent's previous delta (at most one per agent per
    50 ms). Ephemeral: never in the event log; stream-json shows it only with
    ``--include-partial-messages``."""

    ephemeral: ClassVar[bool] = True

    agent: str
    text: str


@message()
class LlmRetry(DomainEvent):
    """A failed LLM request will be tried again after ``delay`` seconds."""

    agent: str
    attempt: int
    """The attempt that failed, from 1."""
    status: int | None
    """The HTTP status of the failure; ``None`` when there was none (a network error)."""
    delay: float
    error: str | None = None
    """Why the attempt failed, redacted (``None`` in logs written before it was recorded)."""


@message()
class LlmTryFailed(DomainEvent):
    """A try of an agent's round or presentation failed: its LLM call failed (after the
    request's own retries), or its reply could not be used. The next try begins after
    ``wait`` seconds; ``None``: there is none (the agent is excluded, or the presentation
    fails)."""

    agent: str
    failed: int
    """The failed try's number, from 1."""
    tries: int
    """Tries the round may take (``max_tries_per_round``)."""
    error: str = attrs.field(converter=clip)
    """Why it failed, redacted, cut to :data:`PREVIEW_BYTES`."""
    wait: float | None


@message()
class ToolCallStarted(DomainEvent):
    agent: str
    tool: str
    call_id: str
    arguments: str = attrs.field(converter=clip)
    """The call's JSON arguments, cut to :data:`PREVIEW_BYTES`."""


@message()
class ToolCallFinished(DomainEvent):
    agent: str
    tool: str
    call_id: str
    arguments: str = attrs.field(converter=clip)
    output: str
    """What the tool returned to the model, whole."""
    duration: float
    ok: bool
    error: str | None
    """Why the call failed or was refused, whole (``None`` when it succeeded)."""
    refused: bool = False
    """The call never ran: a check refused it (``error`` says why). ``False`` in logs
    written before refusals were told apart."""
