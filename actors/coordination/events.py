"""What the coordinator records for people: the event log, progress and replay read these."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.runtime import message

__all__ = [
    "AgentExcluded",
    "AnswerAdded",
    "FinalAnswerProduced",
    "HumanGateFailed",
    "PresentationFailed",
    "PresenterReplaced",
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


@message()
class PresenterReplaced(DomainEvent):
    """The vote's winner cannot present (it was excluded): ``presenter`` does instead, or
    nobody (``None``: the winner's answer stands verbatim). ``reason`` says why."""

    winner: str
    presenter: str | None
    reason: str


@message()
class PresentationFailed(DomainEvent):
    """A presentation did not produce the final answer. ``retrying``: the presenter crashed
    and is asked again (it restarts); otherwise the chosen answer stands verbatim."""

    presenter: str
    attempt: int
    error: str
    retrying: bool


@message()
class HumanGateFailed(DomainEvent):
    """The human gate could not decide the override window (it raised, or chose an agent
    without an answer): the vote's winner presents. ``error`` says what went wrong."""

    error: str
