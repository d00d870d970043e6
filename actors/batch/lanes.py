"""Lanes: a fixed number of parallel workers that each claim the next job when free.

A lane is a loop: claim an index, run it, claim again, until the claims run out. Lanes that
share one claim counter balance themselves: a lane whose runs are short simply claims more.
That is why the counter is the only thing shared between processes (:class:`SharedCounter`
lives in shared memory), and why stopping a batch from starting anything new is closing
the counter: every lane finishes what it holds, claims nothing, and ends.

Used by ``conclave batch`` (both engines) and by the load benchmark's batch scenario, so the
benchmark measures the driver users run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from multiprocessing.context import BaseContext
from typing import Protocol

import trio

__all__ = ["Claims", "Counter", "SharedCounter", "run_lanes"]


class Claims(Protocol):
    """Hands out job indices, each once, until exhausted or closed."""

    def claim(self) -> int | None:
        """The next index, or ``None`` when there is nothing left to start."""
        ...

    def close(self) -> None:
        """Start nothing more: every later :meth:`claim` returns ``None``."""
        ...


class Counter:
    """Claims for lanes in one process: ``0 .. total - 1`` in order."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._next = 0

    def claim(self) -> int | None:
        if self._next >= self.total:
            return None
        self._next += 1
        return self._next - 1

    def close(self) -> None:
        self._next = self.total


class SharedCounter:
    """Claims shared by processes: one integer in shared memory behind its lock. Pass it to
    :class:`multiprocessing.Process` as an argument (it travels only while spawning)."""

    def __init__(self, total: int, context: BaseContext) -> None:
        self.total = total
        self._next = context.Value("q", 0)

    def claim(self) -> int | None:
        with self._next.get_lock():
            i = int(self._next.value)
            if i >= self.total:
                return None
            self._next.value = i + 1
        return i

    def close(self) -> None:
        with self._next.get_lock():
            self._next.value = self.total

    @property
    def claimed(self) -> int:
        """How many indices have been handed out (``total`` once closed)."""
        with self._next.get_lock():
            return min(int(self._next.value), self.total)


async def run_lanes(
    slots: int, claims: Claims | Callable[[], int | None], work: Callable[[int], Awaitable[None]]
) -> None:
    """Run ``work(i)`` for every index ``claims`` hands out, at most ``slots`` at a time.

    Returns when every lane has found the claims exhausted (or closed) and finished its last
    job. Cancelling it cancels the jobs in flight; an exception from ``work`` cancels the
    other lanes and propagates.
    """
    claim = claims if callable(claims) else claims.claim

    async def lane() -> None:
        while (i := claim()) is not None:
            await work(i)

    async with trio.open_nursery() as nursery:
        for _ in range(slots):
            nursery.start_soon(lane)
