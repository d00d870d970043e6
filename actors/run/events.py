"""The run's last event: how it ended. Nothing is recorded in the run's log after it."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.runtime import message

__all__ = ["RunEnded"]


@message()
class RunEnded(DomainEvent):
    termination: str
    """A :class:`~actors.run.termination.Termination` (a ``StrEnum``, so its members are
    strings, as the field decodes from a log)."""
    winner: str | None
    final_answer: str | None
    decided_by: str | None = None
    """A :class:`~actors.run.termination.DecidedBy` value; ``None`` without a final answer."""
    failure_reason: str | None = None
    """Why a ``failed`` run failed."""
