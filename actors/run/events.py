"""The run's last event: how it ended. Nothing is recorded in the run's log after it."""

from __future__ import annotations

from actors.events.base import DomainEvent
from runtime import message

__all__ = ["RunEnded"]


@message()
class RunEnded(DomainEvent):
    termination: str
    """A :class:`~actors.run.result.Termination` value."""
    winner: str | None
    final_answer: str | None
    decided_by: str | None = None
    """A :class:`~actors.run.result.DecidedBy` value; ``None`` without a final answer."""
    failure_reason: str | None = None
    """Why a ``failed`` run failed."""
