"""What a PAOR round records: each change of phase, with its iteration."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.paor.state import PaorPhase
from conclave.runtime import message

__all__ = ["PaorStateChanged"]


@message()
class PaorStateChanged(DomainEvent):
    agent: str
    source: PaorPhase
    """The phase left."""
    target: PaorPhase
    """The phase entered."""
    iteration: int
    """Which plan-act-observe-reflect iteration, from 1 (0 before the first plan)."""
