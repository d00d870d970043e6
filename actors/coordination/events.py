"""What the coordinator records for people: the event log, progress and replay read these."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.config.schema import FinalAnswerStrategy
from conclave.runtime import message

__all__ = [
    "AgentExcluded",
    "AnswerAdded",
    "AnswerRepeated",
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
    strategy: FinalAnswerStrategy


@message()
class AnswerAdded(DomainEvent):
    agent: str
    label: str
    content: str


@message()
class AnswerRepeated(DomainEvent):
    """``agent`` gave the text of the current answer ``label`` as its own before it had been
    shown every answer it can see: no answer was added, and it was no vote yet. The agent has
    taken part as an answerer has, and votes next, in a round that shows every answer. (Had
    it been shown them all, its answer would have counted as its vote: a ``VoteAdded`` with
    ``same_answer``.)"""

    agent: str
    label: str


@message()
class VoteAdded(DomainEvent):
    voter: str
    label: str
    reason: str
    same_answer: bool = False
    """The voter did not call ``vote``: it submitted the text of the answer ``label`` as
    its own answer, which counts as its vote for it (no answer was added). ``False`` in a
    log written before this field existed."""


@message()
class VotesCleared(DomainEvent):
    """The new answer ``by_label`` cleared the votes of ``voters``: the agents it was shown,
    its author included, that held one. A reader applies it as it stands; no other vote
    changed."""

    by_label: str
    voters: tuple[str, ...] | None = None
    """Whose votes it cleared, in the order they were cast. ``None`` only in a log written
    before this field existed, which said how many and not whose: readers take it that
    every vote standing then was cleared, as they did then (right for all-to-all runs)."""
    cleared: int
    """How many votes it cleared: the length of ``voters`` (kept for the readers that
    counted them before ``voters`` existed)."""


@message()
class AgentExcluded(DomainEvent):
    agent: str
    reason: str
    withdrawn_vote: str | None = None
    """The label of the vote it held, which no longer counts (an excluded agent does not
    vote); ``None`` if it held none or coordination was over (the votes that decided it
    stand), and in a log written before this field existed."""


@message()
class VotingComplete(DomainEvent):
    winner: str
    label: str
    tally: dict[str, int]


@message()
class FinalAnswerProduced(DomainEvent):
    presenter: str | None
    strategy: FinalAnswerStrategy
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
