"""What an agent records about its rounds and LLM calls."""

from __future__ import annotations

from actors.events.base import DomainEvent
from runtime import message

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
    status: str
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
    policy: str


@message()
class LlmRequestStarted(DomainEvent):
    agent: str
    purpose: str


@message()
class LlmRequestFinished(DomainEvent):
    agent: str
    purpose: str
    outcome: str
    """``ok``, ``error``, ``timeout`` or ``cancelled``."""
    input_tokens: int = 0
    output_tokens: int = 0


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
