"""The backend interface every LLM speaks (protocol v2): chat messages and tool schemas in,
one assistant message (text and/or tool calls) out. Scripted, OpenAI and Anthropic backends
implement it.

Streaming goes to a synchronous :class:`CompletionSink` while the call runs, and the call
still returns the whole completion: no async generator crosses this seam (under trio an
abandoned one keeps its connection until garbage collection).
"""

from __future__ import annotations

import enum
from typing import Any, Literal, Protocol

import attrs

from conclave.actors.llm.errors import LLMError

__all__ = [
    "CallOutcome",
    "CallPurpose",
    "ChatMessage",
    "Completion",
    "CompletionRequest",
    "CompletionSink",
    "LLMBackend",
    "LLMError",
    "StopReason",
    "ToolCall",
    "ToolChoice",
    "ToolSchema",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]


@attrs.frozen(kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """Raw JSON text, as the model produced it: parsing (and failing to) is the caller's job."""


@attrs.frozen(kw_only=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    provider_state: dict[str, Any] | None = None
    """Opaque state a provider needs back on later turns of the same loop (Anthropic's
    signed thinking blocks); other backends ignore it."""
    cache_point: bool = False
    """The part of the prompt that other requests share (other agents', later rounds') ends
    with this message: a provider whose prompt cache needs marks (Anthropic's
    ``cache_control``) marks it; one that caches every prefix (OpenAI) needs nothing."""


@attrs.frozen(kw_only=True)
class ToolSchema:
    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool = False
    """Changes nothing outside the call: the loop may run it concurrently with other
    read-only calls, and plan mode offers only these."""


@attrs.frozen(kw_only=True)
class Usage:
    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Reply tokens, reasoning included."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


class ToolChoice(enum.Enum):
    AUTO = "auto"
    REQUIRED = "required"
    """The reply must call a tool (coordination rounds, where servers support it)."""
    NONE = "none"


class CallPurpose(enum.StrEnum):
    """Why the call is made: events, pricing and per-purpose settings key on it."""

    ROUND = "round"
    PRESENT = "present"
    COMPACT = "compact"
    """Summarising a session's older exchanges (:mod:`actors.session.compaction`)."""


class CallOutcome(enum.StrEnum):
    """How one LLM call ended, as the ``LlmRequestFinished`` event reports it."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


class StopReason(enum.StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    """Cut off at the output limit: the reply is incomplete."""
    REFUSAL = "refusal"
    OTHER = "other"


@attrs.frozen(kw_only=True)
class CompletionRequest:
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSchema, ...] = ()
    tool_choice: ToolChoice = ToolChoice.AUTO
    max_output_tokens: int | None = None
    purpose: CallPurpose = CallPurpose.ROUND


@attrs.frozen(kw_only=True)
class Completion:
    message: ChatMessage
    usage: Usage | None = Usage()
    """What the call used; ``None`` when the server reported nothing (an OpenAI-compatible
    server asked for no usage, ``stream_usage: false``, or one that ignores the request)."""
    stop_reason: StopReason = StopReason.END_TURN
    model: str = ""
    estimated_usage: Usage | None = None
    """Set by the loop when ``usage`` is ``None``: the call's tokens estimated from the
    characters sent and received (:func:`actors.llm.pricing.estimated_usage`), which
    ``--max-cost`` counts; never shown as a count."""


class CompletionSink(Protocol):
    """Hears a call's progress while it runs. Called synchronously from the backend's task:
    an implementation must be quick and must not raise (the caller isolates it anyway)."""

    def text(self, delta: str) -> None: ...

    def reasoning(self, delta: str) -> None: ...

    def tool_arguments(self, index: int, name: str, delta: str) -> None: ...

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        """Attempt ``attempt`` of a request failed (``status``, or ``None`` with none: a
        lost connection) because of ``error`` (redacted); it is sent again in ``delay``
        seconds."""
        ...


class LLMBackend(Protocol):
    """One model endpoint for one agent. Must be cancellation-safe: a cancelled
    ``complete`` leaves the backend usable for the next call. Failures are raised as the
    classes in :mod:`actors.llm.errors`."""

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion: ...
