"""The run's last event: how it ended. Nothing is recorded after it."""

from __future__ import annotations

from actors.events.base import DomainEvent
from runtime import message

__all__ = ["RunEnded"]


@message()
class RunEnded(DomainEvent):
    termination: str
    winner: str | None
    final_answer: str | None
