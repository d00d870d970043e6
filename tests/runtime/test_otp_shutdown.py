"""Shutdown is bounded and honest: a crash while stopping is recorded as a crash, a child
stuck where cancellation cannot reach is abandoned after its bound, and every incarnation's
teardown hooks run however it ends."""

from __future__ import annotations

import math
import threading

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    ActorContext,
    ChildStopped,
    Envelope,
    HowStopped,
    MemoryTap,
    Strategy,
    SupervisorSpec,
    open_actor_system,
)
from tests.runtime.helpers import Crash, Finish, Hang, Journal, Worker, addr, events

# ---------------------------------------------------------------- crashes while stopping


class CrashesWhenStopping(Worker):
    async def stopping(self) -> None:
        raise RuntimeError("could not flush")


async def test_a_crash_in_stopping_is_recorded_as_crashed_with_its_error(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), lambda ctx: CrashesWhenStopping(ctx, journal))
        await wait_all_tasks_blocked()

    [stopped] = tap.of_type(ChildStopped)
    assert (stopped.how, stopped.error) == ("crashed", "RuntimeError: could not flush")


async def test_a_graceful_stop_records_no_error(tap: MemoryTap, journal: Journal) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), lambda ctx: Worker(ctx, journal))
        await wait_all_tasks_blocked()

    [stopped] = tap.of_type(ChildStopped)
    assert (stopped.how, stopped.error) == ("graceful", None)


# ---------------------------------------------------------------- the shutdown bound


class BlockedInAThread(Worker):
    """Its handler sits in a worker thread that ignores cancellation until ``release``."""

    def __init__(
        self,
        context: ActorContext,
        journal: Journal,
        release: threading.Event,
        ended: trio.Event | None = None,
    ) -> None:
        super().__init__(context, journal)
        self.release = release
        self.ended = ended if ended is not None else trio.Event()

    async def handle(self, envelope: Envelope) -> None:
        if isinstance(envelope.payload, Hang):
            try:
                await trio.to_thread.run_sync(self.release.wait)
            finally:
                self.ended.set()
        else:
            await super().handle(envelope)


async def test_a_child_stuck_in_a_thread_is_abandoned_and_recorded_killed_after_its_bound(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    release = threading.Event()
    try:
        async with open_actor_system(taps=[tap]) as system:
            system.spawn(
                addr("a"),
                lambda ctx: BlockedInAThread(ctx, journal, release),
                shutdown=2,
                kill_timeout=3,
            )
            await system.tell(addr("a"), Hang())
            await wait_all_tasks_blocked()
            stopping = trio.current_time()

            with trio.fail_after(60):
                await system.root.terminate_child("worker:a")

            [stopped] = tap.of_type(ChildStopped)
            assert stopped.how is HowStopped.KILLED
            assert stopped.at - stopping == pytest.approx(5)
            assert not system.is_registered(addr("a"))
            release.set()
    finally:
        release.set()


async def test_an_abandoned_incarnation_that_ends_late_is_not_taken_for_its_successor(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    release, ended = threading.Event(), trio.Event()
    one_for_all = SupervisorSpec(strategy=Strategy.ONE_FOR_ALL)
    try:
        async with open_actor_system(supervisor=one_for_all) as system:
            system.spawn(
                addr("a"),
                lambda ctx: BlockedInAThread(ctx, journal, release, ended),
                shutdown=1,
                kill_timeout=1,
            )
            system.spawn(addr("b"), lambda ctx: Worker(ctx, journal))
            await system.tell(addr("a"), Hang())
            await wait_all_tasks_blocked()
            await system.tell(addr("b"), Crash())
            await trio.sleep(10)
            assert journal.starts("a") == [1, 2]

            release.set()
            await ended.wait()
            await trio.sleep(10)

            assert journal.starts("a") == [1, 2]
    finally:
        release.set()


async def test_a_child_that_unwinds_promptly_when_killed_is_not_kept_waiting_for(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), lambda ctx: Worker(ctx, journal), shutdown=2, kill_timeout=100)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        leaving = trio.current_time()

    [stopped] = tap.of_type(ChildStopped)
    assert stopped.how is HowStopped.KILLED
    assert stopped.at - leaving == pytest.approx(2)


# ---------------------------------------------------------------- teardown hooks


class HoldsAResource(Worker):
    """Acquires a "container" in ``started`` and releases it in a teardown hook that awaits
    (as removing a container does), so it only completes if the teardown is shielded."""

    async def started(self) -> None:
        await super().started()
        self.context.on_teardown(self._release)

    async def _release(self) -> None:
        await trio.sleep(1)
        self.journal.add("released", self.name, self.context.incarnation)


async def test_teardown_hooks_run_when_an_incarnation_stops_gracefully(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), lambda ctx: HoldsAResource(ctx, journal))
        await system.tell(addr("a"), Finish())
        await trio.sleep(5)

        assert ("released", "a", 1) in journal.entries


async def test_teardown_hooks_run_when_an_incarnation_crashes(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), lambda ctx: HoldsAResource(ctx, journal))
        await system.tell(addr("a"), Crash())
        await trio.sleep(5)

        assert ("released", "a", 1) in journal.entries


async def test_teardown_hooks_run_to_completion_when_an_incarnation_is_cancelled(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    with trio.CancelScope() as scope:
        async with open_actor_system() as system:
            system.spawn(addr("a"), lambda ctx: HoldsAResource(ctx, journal))
            await system.tell(addr("a"), Hang())
            await wait_all_tasks_blocked()
            scope.cancel()
            await trio.sleep_forever()

    assert ("released", "a", 1) in journal.entries


async def test_teardown_runs_after_stopping(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), lambda ctx: HoldsAResource(ctx, journal))
        await wait_all_tasks_blocked()

    assert [e[0] for e in journal.entries] == ["started", "stopping", "released"]


async def test_teardown_hooks_run_in_reverse_order_of_registration(journal: Journal) -> None:
    class TwoHooks(Worker):
        async def started(self) -> None:
            for name in ("first", "second"):
                self.context.exit_stack.callback(self.journal.add, "released", name)

    async with open_actor_system() as system:
        system.spawn(addr("a"), lambda ctx: TwoHooks(ctx, journal))
        await wait_all_tasks_blocked()

    assert journal.of("released") == ["second", "first"]


async def test_a_teardown_that_overruns_its_bound_is_cut_short_and_recorded(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    class NeverReleases(Worker):
        async def started(self) -> None:
            self.context.on_teardown(trio.sleep_forever)

    with trio.fail_after(60):
        async with open_actor_system(taps=[tap]) as system:
            system.spawn(
                addr("a"),
                lambda ctx: NeverReleases(ctx, journal),
                shutdown=math.inf,
                kill_timeout=4,
            )
            await wait_all_tasks_blocked()
            leaving = trio.current_time()

    [stopped] = events(tap, ChildStopped, child="worker:a")
    assert stopped.at - leaving == pytest.approx(4)
    assert stopped.how is HowStopped.CRASHED
    assert stopped.error == (
        "TeardownTimeout: the teardown hooks of worker:a (incarnation 1) did not finish "
        "within 4s and were cancelled; make them faster or raise the actor's kill_timeout"
    )


async def test_each_incarnation_gets_its_own_exit_stack(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system(supervisor=SupervisorSpec(intensity=5)) as system:
        system.spawn(addr("a"), lambda ctx: HoldsAResource(ctx, journal))
        for _ in range(2):
            await system.tell(addr("a"), Crash())
            await trio.sleep(5)

    assert [e[2] for e in journal.entries if e[0] == "released"] == [1, 2, 3]
