"""The Plan-Act-Observe-Reflect machine: its phases and the one table of legal moves.

A PAOR round is a walk through this table. The driver asks :meth:`PaorMachine.move` for
every change of phase; a move the table does not hold raises :class:`IllegalTransition`, so
a bug in the driver surfaces at once instead of as a round that silently skips reflection.
Each move is reported (``on_move``) with the iteration it belongs to, and the agent records
it as a ``PaorStateChanged`` event. The machine is pure: no I/O, no trio.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from types import MappingProxyType

__all__ = ["TRANSITIONS", "IllegalTransition", "PaorMachine", "PaorPhase"]


class PaorPhase(enum.Enum):
    IDLE = "idle"
    PLANNING = "planning"
    ACTING = "acting"
    OBSERVING = "observing"
    REFLECTING = "reflecting"
    AWAITING_USER = "awaiting_user"
    COMPLETE = "complete"
    FAILED = "failed"


_P = PaorPhase

TRANSITIONS: Mapping[PaorPhase, frozenset[PaorPhase]] = MappingProxyType(
    {
        _P.IDLE: frozenset({_P.PLANNING}),
        _P.PLANNING: frozenset({_P.ACTING, _P.FAILED}),
        _P.ACTING: frozenset({_P.OBSERVING, _P.FAILED}),
        _P.OBSERVING: frozenset({_P.REFLECTING}),
        _P.REFLECTING: frozenset({_P.PLANNING, _P.COMPLETE, _P.FAILED, _P.AWAITING_USER}),
        # The user answered: plan again with the answer; or nobody can answer: stop.
        _P.AWAITING_USER: frozenset({_P.PLANNING, _P.FAILED}),
        _P.COMPLETE: frozenset(),
        _P.FAILED: frozenset(),
    }
)
"""Every legal move: phase → the phases it may go to. ``COMPLETE`` and ``FAILED`` end."""

FINAL = frozenset(phase for phase, targets in TRANSITIONS.items() if not targets)


class IllegalTransition(Exception):
    """A move the table does not hold: a bug in whoever drives the machine."""

    def __init__(self, source: PaorPhase, target: PaorPhase) -> None:
        allowed = ", ".join(sorted(p.value for p in TRANSITIONS[source])) or "nothing (it ended)"
        super().__init__(
            f"illegal PAOR transition {source.value} -> {target.value}; "
            f"from {source.value} the machine may go to: {allowed}"
        )
        self.source = source
        self.target = target


OnMove = Callable[[PaorPhase, PaorPhase, int], None]
"""Hears each move: (from, to, iteration)."""


class PaorMachine:
    """The phase of one PAOR round and its iteration count (an iteration starts with each
    move into ``PLANNING``, counting from 1). ``iteration``: how many the round made before
    (a resumed round goes on counting from them)."""

    def __init__(self, on_move: OnMove | None = None, *, iteration: int = 0) -> None:
        self.phase = PaorPhase.IDLE
        self.iteration = iteration
        self._on_move = on_move

    @property
    def ended(self) -> bool:
        return self.phase in FINAL

    def move(self, target: PaorPhase) -> None:
        """Go to ``target``, or raise :class:`IllegalTransition` (the phase is unchanged)."""
        source = self.phase
        if target not in TRANSITIONS[source]:
            raise IllegalTransition(source, target)
        if target is PaorPhase.PLANNING:
            self.iteration += 1
        self.phase = target
        if self._on_move is not None:
            self._on_move(source, target, self.iteration)
