"""Messages an agent's background work sends to the agent itself."""

from __future__ import annotations

import enum

from conclave.runtime import Message, message

__all__ = ["ResumeRound", "RoundOutcome", "RoundSettled"]


class RoundOutcome(enum.Enum):
    """How a round's work ended."""

    ANSWERED = "answered"
    """The coordinator accepted its new answer."""
    VOTED = "voted"
    """The coordinator accepted its vote (or its answer as one: the same as a current one)."""
    SAME_ANSWER = "same_answer"
    """Its answer was the same as a current one, taken as its part (it had not been shown
    every answer): it has taken part as an answerer has, and votes next."""
    STALE = "stale"
    """Newer answers made its result moot: a fresh round sees them (a restart)."""
    RETRY = "retry"
    """Not the agent's doing (the coordinator restarted under it): a fresh round."""
    FAILED = "failed"
    """It used up its tries, or its backend cannot serve it: the agent is excluded."""


@message()
class ResumeRound(Message):
    """An agent tells itself to start its next round after queued updates are merged."""

    generation: int


@message()
class RoundSettled(Message):
    """A round's work ended; ``label`` names what was accepted, ``reason`` why it failed.

    Told by the round to its agent only when mail is waiting in the agent's mailbox (the
    round settles behind it); otherwise the round settles at once, without a message."""

    generation: int
    outcome: RoundOutcome
    label: str | None = None
    reason: str = ""
