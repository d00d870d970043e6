"""Lanes: a fixed number of parallel workers that each claim the next job when free.

A lane is a loop: claim an index, run it, claim again, until the claims run out. Lanes that
share one claim counter balance themselves: a lane whose runs are short simply claims more.
That is why the counter is the only thing shared between processes
(:class:`~actors.batch.claims.SharedCounter` lives in shared memory), and why stopping a
batch from starting anything new is closing the counter: every lane finishes what it holds,
claims nothing, and ends.

Used by ``conclave batch`` (both engines) and by the load benchmark's batch scenario, so the
benchmark measures the driver users run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from conclave.actors.batch.claims import Claims

__all__ = ["run_lanes"]


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
