"""What an agent records about its rounds and LLM calls."""

from __future__ import annotations

from actors.events.base import DomainEvent
from runtime import message

__all__ = [
    "AgentStatusChanged",
    "LlmRequestFinished",
    "LlmRequestStarted",
    "RoundRestarted",
    "RoundStarted",
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
