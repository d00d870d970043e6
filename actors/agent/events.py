"""What an agent records about its rounds and LLM calls."""

from __future__ import annotations

from conclave.actors.agent.status import AgentStatus
from conclave.actors.events.base import DomainEvent
from conclave.actors.llm.protocol import CallOutcome, CallPurpose, StopReason
from conclave.config.schema import InFlightPolicy
from conclave.runtime import message

__all__ = [
    "AgentStatusChanged",
    "AnswersInjected",
    "LlmRequestFinished",
    "LlmRequestStarted",
    "RoundRestarted",
    "RoundStarted",
    "TranscriptFailed",
]


@message()
class AgentStatusChanged(DomainEvent):
    agent: str
    status: AgentStatus
    detail: str = ""


@message()
class RoundStarted(DomainEvent):
    agent: str
    round: int
    tools: tuple[str, ...]


@message()
class RoundRestarted(DomainEvent):
    agent: str
    round: int
    policy: InFlightPolicy
    """The round's in-flight policy: ``cancel`` or ``finish`` (``inject`` never restarts)."""


@message()
class LlmRequestStarted(DomainEvent):
    agent: str
    purpose: CallPurpose


@message()
class LlmRequestFinished(DomainEvent):
    """One LLM call ended. Fields after ``output_tokens`` came later: they have defaults so
    event logs written before them still load."""

    agent: str
    purpose: CallPurpose
    outcome: CallOutcome
    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Reply tokens, reasoning included."""
    model: str | None = None
    """The model that answered, as the backend names it; ``None`` without a reply."""
    stop_reason: StopReason | None = None
    """Why the reply ended; ``None`` without a reply."""
    cache_read_tokens: int = 0
    """Prompt tokens read from the provider's prompt cache (part of ``input_tokens``)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the prompt cache (part of ``input_tokens``)."""
    reasoning_tokens: int = 0
    """Reply tokens spent thinking (part of ``output_tokens``)."""
    error: str | None = None
    """Why the call failed, with every key redacted; ``None`` when it did not."""
    usage_reported: bool = True
    """Whether the server said what the call used: ``false`` when a reply came without usage
    (the token counts above are then 0 for want of a number, not a count)."""
    estimated_input_tokens: int = 0
    """With ``usage_reported`` false: the prompt tokens estimated from the characters sent
    (1 token per 3), which ``--max-cost`` counts; 0 otherwise."""
    estimated_output_tokens: int = 0
    """As ``estimated_input_tokens``, for the reply."""


@message()
class AnswersInjected(DomainEvent):
    """Answers that arrived while a round with tools was working entered its transcript at
    a step boundary (the ``inject`` in-flight policy): no restart, no work discarded."""

    agent: str
    round: int
    labels: tuple[str, ...]


@message()
class TranscriptFailed(DomainEvent):
    """The agent's transcript file could not be written; it stops writing it (the run goes
    on). ``error`` names the path and the cause."""

    agent: str
    error: str
