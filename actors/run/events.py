"""The run's last event: how it ended. Nothing is recorded in the run's log after it."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.run.termination import DecidedBy, Termination
from conclave.runtime import message

__all__ = ["RunEnded"]


@message()
class RunEnded(DomainEvent):
    termination: Termination
    winner: str | None
    final_answer: str | None
    decided_by: DecidedBy | None = None
    """``None`` without a final answer."""
    failure_reason: str | None = None
    """Why a ``failed`` run failed."""
