"""The scripted backend's shared timer: waits end at their deadlines, as trio.sleep_until's
do, without a cancel scope per wait."""

from __future__ import annotations

import trio
import trio.testing

from conclave.actors.llm.scripted_timer import sleep_until


async def test_waiters_wake_at_their_deadlines_in_deadline_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    woke: list[tuple[float, float]] = []

    async def wait(offset: float) -> None:
        await sleep_until(start + offset)
        woke.append((offset, trio.current_time() - start))

    async with trio.open_nursery() as nursery:
        for offset in (0.3, 0.1, 0.2, 0.1, 5.0):
            nursery.start_soon(wait, offset)

    assert [offset for offset, _ in woke] == [0.1, 0.1, 0.2, 0.3, 5.0]
    assert all(abs(at - offset) < 1e-9 for offset, at in woke)


async def test_a_later_waiter_with_an_earlier_deadline_is_not_kept_waiting(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    woke: list[float] = []

    async def wait(offset: float) -> None:
        await sleep_until(start + offset)
        woke.append(trio.current_time() - start)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, 10.0)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(wait, 1.0)

    assert woke == [1.0, 10.0]


async def test_a_cancelled_wait_raises_cancelled_and_the_others_still_wake_on_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    woke: list[float] = []
    cancelled: list[bool] = []

    async def wait(offset: float) -> None:
        await sleep_until(start + offset)
        woke.append(trio.current_time() - start)

    async def wait_then_cancelled() -> None:
        with trio.move_on_after(0.5) as scope:
            await sleep_until(start + 1.0)
        cancelled.append(scope.cancelled_caught)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait_then_cancelled)
        nursery.start_soon(wait, 2.0)

    assert cancelled == [True]
    assert woke == [2.0]


async def test_a_past_deadline_is_a_checkpoint() -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        await sleep_until(trio.current_time() - 1)
    assert scope.cancelled_caught


async def test_the_waits_of_a_run_share_one_timer_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for i in range(50):
            nursery.start_soon(sleep_until, start + 1 + i / 100)
        await trio.testing.wait_all_tasks_blocked()
        root = trio.lowlevel.current_root_task()
        assert root is not None
        system = root.child_nurseries
        timers = [t for n in system for t in n.child_tasks if t.name == "scripted backend timer"]
        assert len(timers) == 1
