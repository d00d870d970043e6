"""Messages an agent's background work sends to the agent itself."""

from __future__ import annotations

from runtime import Message, message

__all__ = ["ResumeRound", "RoundSettled"]


@message()
class ResumeRound(Message):
    """An agent tells itself to start its next round after queued updates are merged."""

    generation: int


@message()
class RoundSettled(Message):
    """A round's work ended: ``outcome`` is answered, voted, stale or failed."""

    generation: int
    outcome: str
    label: str | None = None
    reason: str = ""
