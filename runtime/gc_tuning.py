"""Garbage-collector settings for processes that run actor systems.

Every message allocates a handful of short-lived objects (envelope, payload, event) that
reference counting frees at once; almost none form cycles. With CPython's default gen-0
threshold (700 allocations) the cyclic collector still ran thousands of times per run and,
with ten thousand agents' state alive, each pass was dear: raising the threshold made a
1,000-agent run 10-30 % faster in ``conclave bench``. At 100,000 the collector still took
6-7 % of the CPU of a batch of 1,000 runs; at 1,000,000 it takes under 1 %, for 25-75 MB
more peak RSS per batch process.

A big run keeps its agents' state alive: a run of 10,000 agents holds about three million
objects more at its end than at its start, so a threshold of a million still brought one pass
that scanned a million live objects (0.45-0.5 s of CPU, about 5 % of the run) and collected
60. So while runs are open (:func:`gc_sized_for_agents`), the gen-0 threshold grows with the
agents they hold: :data:`GEN0_PER_AGENT` allocations per agent, never below
:data:`GEN0_THRESHOLD`; a batch of small runs keeps the base threshold.

This is process-wide, so only entry points (the ``conclave`` command, the benchmarks) choose
it, by calling :func:`tune_gc_for_actors`; until one does, :func:`gc_sized_for_agents`
leaves the collector as it is, so a program using the library keeps its own settings.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["GEN0_PER_AGENT", "GEN0_THRESHOLD", "gc_sized_for_agents", "tune_gc_for_actors"]

GEN0_THRESHOLD = 1_000_000
"""Net allocations of container objects between two gen-0 passes, outside big runs."""
GEN0_PER_AGENT = 500
"""The gen-0 threshold per agent of the open runs: above what a run allocates and keeps
per agent (about 300 in a 10,000-agent ring run), so a run's live state is not scanned."""
_OLDER_THRESHOLDS = (50, 100)
_MAX_THRESHOLD = 2**31 - 1
"""The largest threshold CPython takes (a C int)."""


class _Sizing:
    """Whether an entry point chose these settings, and the agents of the runs open now."""

    def __init__(self) -> None:
        self.tuned = False
        self.agents = 0

    def apply(self) -> None:
        gen0 = min(max(GEN0_THRESHOLD, GEN0_PER_AGENT * self.agents), _MAX_THRESHOLD)
        gc.set_threshold(gen0, *_OLDER_THRESHOLDS)


_SIZING = _Sizing()


def tune_gc_for_actors() -> None:
    """Set this process's collector for actor systems (module docstring): entry points only."""
    _SIZING.tuned = True
    _SIZING.apply()


@contextmanager
def gc_sized_for_agents(agents: int) -> Iterator[None]:
    """Within: the gen-0 threshold also counts these ``agents`` (if an entry point called
    :func:`tune_gc_for_actors`; otherwise nothing changes). Runs open at once add up; on
    exit, however it happens, the threshold no longer counts them."""
    if not _SIZING.tuned:
        yield
        return
    _SIZING.agents += agents
    _SIZING.apply()
    try:
        yield
    finally:
        _SIZING.agents -= agents
        _SIZING.apply()
