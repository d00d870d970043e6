"""What the coordinator records for people: the event log, progress and replay read these."""

from __future__ import annotations

from actors.events.base import DomainEvent
from runtime import message

__all__ = [
    "AgentExcluded",
    "AnswerAdded",
    "FinalAnswerProduced",
    "RunStarted",
    "VoteAdded",
    "VotesCleared",
    "VotingComplete",
]


@message()
class RunStarted(DomainEvent):
    task: str
    agents: tuple[str, ...]
    anonymous_ids: tuple[str, ...]
    strategy: str


@message()
class AnswerAdded(DomainEvent):
    agent: str
    label: str
    content: str


@message()
class VoteAdded(DomainEvent):
    voter: str
    label: str
    reason: str


@message()
class VotesCleared(DomainEvent):
    by_label: str
    cleared: int


@message()
class AgentExcluded(DomainEvent):
    agent: str
    reason: str


@message()
class VotingComplete(DomainEvent):
    winner: str
    label: str
    tally: dict[str, int]


@message()
class FinalAnswerProduced(DomainEvent):
    presenter: str | None
    strategy: str
    content: str
