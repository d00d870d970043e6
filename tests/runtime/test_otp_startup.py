"""A crash in ``Actor.started()`` is a start failure (OTP: init returns an error): it is not
restarted, it is recorded as such, and it escalates to whoever supervises the actor."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Actor,
    ActorContext,
    ChildExited,
    Envelope,
    MemoryTap,
    Restart,
    StartFailed,
    SupervisorAction,
    SupervisorEscalated,
    SupervisorSpec,
    open_actor_system,
)
from tests.runtime.helpers import Echo, Journal, addr, events, worker


class FailsToStart(Actor):
    def __init__(self, context: ActorContext, journal: Journal) -> None:
        super().__init__(context)
        self.journal = journal

    async def started(self) -> None:
        self.journal.add("started", self.context.address.key, self.context.incarnation)
        raise RuntimeError("no sandbox")

    async def handle(self, envelope: Envelope) -> None:
        return None


async def test_an_actor_that_crashes_in_started_is_not_restarted(journal: Journal) -> None:
    with pytest.raises(StartFailed):
        async with open_actor_system(supervisor=SupervisorSpec(intensity=10)) as system:
            system.spawn(addr("a"), lambda ctx: FailsToStart(ctx, journal))
            await trio.sleep_forever()

    assert journal.starts("a") == [1]


async def test_a_crash_in_started_escalates_out_of_open_actor_system_naming_the_actor(
    journal: Journal,
) -> None:
    with pytest.raises(StartFailed) as caught:
        async with open_actor_system(supervisor=SupervisorSpec(intensity=10)) as system:
            system.spawn(addr("a"), lambda ctx: FailsToStart(ctx, journal))
            await trio.sleep_forever()

    assert caught.value.address == addr("a")
    assert isinstance(caught.value.error, RuntimeError)
    assert str(caught.value).startswith(
        "worker:a crashed in started() (incarnation 1): RuntimeError: no sandbox"
    )


async def test_a_crash_in_started_is_recorded_as_a_start_failure(
    tap: MemoryTap, journal: Journal
) -> None:
    with pytest.raises(StartFailed):
        async with open_actor_system(taps=[tap]) as system:
            system.spawn(addr("a"), lambda ctx: FailsToStart(ctx, journal))
            await trio.sleep_forever()

    [exited] = tap.of_type(ChildExited)
    assert exited.action is SupervisorAction.ESCALATE
    assert exited.error is not None
    assert exited.error.startswith("StartFailed: worker:a crashed in started()")


async def test_a_factory_that_raises_is_a_start_failure_too(journal: Journal) -> None:
    def broken_factory(ctx: ActorContext) -> Actor:
        raise KeyError("missing setting")

    with pytest.raises(StartFailed, match=r"worker:a crashed in its factory \(incarnation 1\)"):
        async with open_actor_system(supervisor=SupervisorSpec(intensity=10)) as system:
            system.spawn(addr("a"), broken_factory)
            await trio.sleep_forever()


async def test_a_start_failure_under_a_nested_supervisor_escalates_through_the_root(
    tap: MemoryTap, journal: Journal
) -> None:
    with pytest.raises(StartFailed):
        async with open_actor_system(supervisor=SupervisorSpec(intensity=10), taps=[tap]) as system:
            team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=10))
            system.root.start_child(team_child)
            system.spawn(addr("a"), lambda ctx: FailsToStart(ctx, journal), supervisor=team)
            await trio.sleep_forever()

    assert journal.starts("a") == [1]
    assert [e.supervisor for e in tap.of_type(SupervisorEscalated)] == ["team", "system"]


async def test_a_temporary_actor_that_crashes_in_started_is_retired_and_the_rest_goes_on(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("b"), worker(journal))
        system.spawn(addr("a"), lambda ctx: FailsToStart(ctx, journal), restart=Restart.TEMPORARY)
        await wait_all_tasks_blocked()

        [exited] = events(tap, ChildExited, child="worker:a")
        assert exited.action is SupervisorAction.RETIRE
        assert exited.error is not None
        assert exited.error.startswith("StartFailed: worker:a crashed in started()")
        assert not system.is_registered(addr("a"))
        assert await system.ask(addr("b"), Echo(text="still up")) == Echo(text="still up")
