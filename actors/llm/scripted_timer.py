"""One timer for every scripted call of a trio run.

A scripted call waits out its latency; with ``trio.sleep_until`` each wait is a cancel scope
whose deadline trio ends by cancelling it: an exception raised and caught per wait, two or
three per LLM call, about a second of CPU in a run of 10,000 agents. Here the waits of a trio
run share one timer, a system task: each waiting task is parked and rescheduled directly when
its deadline passes, and only the timer's own wait is ended by trio's deadline machinery,
once for all the deadlines that passed together.

Waking is by deadline, as ``trio.sleep_until`` does: a task wakes at or after its deadline,
and tasks whose deadlines have passed wake in deadline order. A cancelled wait raises
``trio.Cancelled`` as ``trio.sleep_until`` would, and the timer forgets it.
"""

from __future__ import annotations

import heapq
import itertools
import math

import trio
from trio.lowlevel import Abort, RaiseCancelT, RunVar, Task

__all__ = ["sleep_until"]


class _Waiter:
    """One parked task; ``task`` is ``None`` once its wait was cancelled."""

    __slots__ = ("deadline", "seq", "task")

    def __init__(self, deadline: float, seq: int, task: Task) -> None:
        self.deadline = deadline
        self.seq = seq
        self.task: Task | None = task

    def __lt__(self, other: _Waiter) -> bool:
        return (self.deadline, self.seq) < (other.deadline, other.seq)


class _Timer:
    """The waiters of one trio run, earliest deadline first, and the task that wakes them."""

    def __init__(self) -> None:
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()
        self._wait = trio.CancelScope(deadline=math.inf)

    async def sleep_until(self, deadline: float) -> None:
        waiter = _Waiter(deadline, next(self._seq), trio.lowlevel.current_task())
        heapq.heappush(self._waiters, waiter)
        if self._waiters[0] is waiter:
            self._wait.deadline = deadline

        def abort(_: RaiseCancelT) -> Abort:
            waiter.task = None  # left in the heap; dropped when its deadline comes
            return Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    async def run(self) -> None:
        """Wake every waiter whose deadline has passed, then wait for the next deadline.
        Runs until the trio run ends (a system task: cancelled when the main task returns)."""
        waiters = self._waiters
        while True:
            with self._wait:
                await trio.sleep_forever()
            now = trio.current_time()
            while waiters and waiters[0].deadline <= now:
                task = heapq.heappop(waiters).task
                if task is not None:
                    trio.lowlevel.reschedule(task)
            self._wait = trio.CancelScope(deadline=waiters[0].deadline if waiters else math.inf)


_TIMER: RunVar[_Timer] = RunVar("scripted_timer")


async def sleep_until(deadline: float) -> None:
    """Wait until trio's clock reaches ``deadline``, as ``trio.sleep_until`` does (a past
    deadline is a checkpoint), on the trio run's shared timer. Cancelling it raises
    ``trio.Cancelled`` and leaves the timer as it was for every other waiter."""
    if deadline <= trio.current_time():
        await trio.lowlevel.checkpoint()
        return
    try:
        timer = _TIMER.get()
    except LookupError:
        timer = _Timer()
        _TIMER.set(timer)
        trio.lowlevel.spawn_system_task(timer.run, name="scripted backend timer")
    await timer.sleep_until(deadline)
