"""What a PAOR round records: each change of phase, with its iteration, and how it ended."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.paor.report import PaorEnd
from conclave.actors.paor.state import PaorPhase
from conclave.runtime import message

__all__ = ["CorrectionApplied", "CorrectionUnused", "PaorFinished", "PaorStateChanged"]


@message()
class PaorStateChanged(DomainEvent):
    agent: str
    source: PaorPhase
    """The phase left."""
    target: PaorPhase
    """The phase entered."""
    iteration: int
    """Which plan-act-observe-reflect iteration, from 1 (0 before the first plan)."""


@message()
class CorrectionApplied(DomainEvent):
    agent: str
    iteration: int
    """The iteration it reached the agent in; the next plan accounts for it."""
    step: int
    """The round's LLM calls before it entered the transcript."""
    correction: str


@message()
class CorrectionUnused(DomainEvent):
    """The run ended before a PAOR round of ``agent`` took this correction: it came too
    late (after the agent's last PAOR round) and changed nothing. Recorded just before
    ``run_ended``."""

    agent: str
    correction: str


@message()
class PaorFinished(DomainEvent):
    agent: str
    end: PaorEnd
    """``goal_achieved``, ``max_iterations`` (the run exits 5 when it is the winner's),
    ``failed`` or ``needs_user``."""
    iterations: int
    summary: str
    """The round's concise summary: its answer (or, short of the goal, its progress)."""
    detail: str
    """Every plan, observation and reflection of the round (``--verbose`` shows it)."""
