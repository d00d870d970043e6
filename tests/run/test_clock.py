"""RunClock: the run's timeout counts from the start, and not while a person decides."""

from __future__ import annotations

import threading

import pytest
import trio
import trio.testing

from conclave.actors.run.clock import RunClock


async def test_the_timeout_expires_after_its_seconds(autojump_clock: trio.abc.Clock) -> None:
    clock = RunClock(10.0)
    await clock.expire()
    assert trio.current_time() == pytest.approx(10.0)


async def test_time_spent_paused_does_not_count(autojump_clock: trio.abc.Clock) -> None:
    clock = RunClock(10.0)

    async def person_decides() -> None:
        await trio.sleep(4.0)
        clock.pause()
        await trio.sleep(100.0)
        clock.resume()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(person_decides)
        await clock.expire()
    assert trio.current_time() == pytest.approx(110.0)


async def test_nested_pauses_pause_once(autojump_clock: trio.abc.Clock) -> None:
    clock = RunClock(10.0)
    clock.pause()
    clock.pause()
    await trio.sleep(5.0)
    clock.resume()
    assert clock.paused
    await trio.sleep(5.0)
    clock.resume()
    assert clock.elapsed() == pytest.approx(0.0)


async def test_without_a_timeout_it_never_expires(autojump_clock: trio.abc.Clock) -> None:
    with trio.move_on_after(1e6) as scope:
        await RunClock(None).expire()
    assert scope.cancelled_caught


async def test_resume_without_pause_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="without a matching pause"):
        RunClock(1.0).resume()


async def test_the_timeout_expires_late_in_a_long_run_where_seconds_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Found by search: at these times "now + remaining" rounds to "now", so a wait for the
    # remaining seconds woke at once, forever, and the virtual clock never moved again.
    autojump_clock.jump(1189.823135)
    clock = RunClock(54.4685)
    autojump_clock.jump(20.150903)
    token = trio.lowlevel.current_trio_token()
    with trio.CancelScope() as hung:
        watchdog = threading.Timer(5.0, lambda: token.run_sync_soon(hung.cancel))
        watchdog.start()
        try:
            await clock.expire()
        finally:
            watchdog.cancel()

    assert not hung.cancelled_caught
    assert trio.current_time() >= 1189.823135 + 54.4685


async def test_a_timeout_too_small_for_the_clock_reading_still_expires(
    autojump_clock: trio.abc.Clock,
) -> None:
    await trio.sleep(1e9)  # noqa: ASYNC116 (a large clock reading is the point)
    with trio.move_on_after(10.0) as scope:
        await RunClock(1e-7).expire()
    assert not scope.cancelled_caught
