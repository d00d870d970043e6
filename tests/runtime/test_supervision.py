"""Supervision: strategies, restart types, intensity and escalation, ordered shutdown."""

from __future__ import annotations

import math

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from conclave.runtime import (
    ActorSystem,
    ChildExited,
    ChildStarted,
    ChildStopped,
    DeadLetter,
    DeadLetterCause,
    HowStopped,
    MemoryTap,
    Restart,
    RestartIntensityExceeded,
    StopOrder,
    Strategy,
    Supervisor,
    SupervisorAction,
    SupervisorEscalated,
    SupervisorSpec,
    open_actor_system,
)
from tests.runtime.helpers import Crash, Finish, Hang, Journal, Nap, Note, addr, events, worker

# ---------------------------------------------------------------- strategies


async def test_one_for_one_restarts_only_the_crashed_child(journal: Journal) -> None:
    spec = SupervisorSpec(strategy=Strategy.ONE_FOR_ONE)
    async with open_actor_system(supervisor=spec) as system:
        for key in "abc":
            system.spawn(addr(key), worker(journal))
        await system.tell(addr("b"), Crash())
        await wait_all_tasks_blocked()

        assert [journal.starts(key) for key in "abc"] == [[1], [1, 2], [1]]


async def test_one_for_all_restarts_every_child(journal: Journal) -> None:
    spec = SupervisorSpec(strategy=Strategy.ONE_FOR_ALL)
    async with open_actor_system(supervisor=spec) as system:
        for key in "abc":
            system.spawn(addr(key), worker(journal))
        await system.tell(addr("b"), Crash())
        await wait_all_tasks_blocked()

        assert [journal.starts(key) for key in "abc"] == [[1, 2], [1, 2], [1, 2]]


async def test_one_for_all_stops_siblings_in_reverse_order_and_restarts_in_start_order(
    tap: MemoryTap, journal: Journal
) -> None:
    spec = SupervisorSpec(strategy=Strategy.ONE_FOR_ALL)
    async with open_actor_system(supervisor=spec, taps=[tap]) as system:
        for key in "abc":
            system.spawn(addr(key), worker(journal))
        await wait_all_tasks_blocked()
        tap.events.clear()
        await system.tell(addr("b"), Crash())
        await wait_all_tasks_blocked()

        lifecycle = [
            (type(e).__name__, e.child)
            for e in tap.events
            if isinstance(e, ChildStopped | ChildStarted)
        ]
        assert lifecycle == [
            ("ChildStopped", "worker:c"),
            ("ChildStopped", "worker:a"),
            ("ChildStarted", "worker:a"),
            ("ChildStarted", "worker:b"),
            ("ChildStarted", "worker:c"),
        ]


async def test_rest_for_one_restarts_the_crashed_child_and_those_started_after_it(
    journal: Journal,
) -> None:
    spec = SupervisorSpec(strategy=Strategy.REST_FOR_ONE)
    async with open_actor_system(supervisor=spec) as system:
        for key in "abc":
            system.spawn(addr(key), worker(journal))
        await system.tell(addr("b"), Crash())
        await wait_all_tasks_blocked()

        assert [journal.starts(key) for key in "abc"] == [[1], [1, 2], [1, 2]]


async def test_a_temporary_sibling_stopped_by_one_for_all_is_not_restarted(
    journal: Journal,
) -> None:
    spec = SupervisorSpec(strategy=Strategy.ONE_FOR_ALL)
    async with open_actor_system(supervisor=spec) as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("temp"), worker(journal), restart=Restart.TEMPORARY)
        await system.tell(addr("a"), Crash())
        await wait_all_tasks_blocked()

        assert journal.starts("temp") == [1]
        assert not system.is_registered(addr("temp"))


# ---------------------------------------------------------------- restart types


@pytest.mark.parametrize(
    ("restart", "trigger", "restarted"),
    [
        (Restart.PERMANENT, Finish(), True),
        (Restart.PERMANENT, Crash(), True),
        (Restart.TRANSIENT, Finish(), False),
        (Restart.TRANSIENT, Crash(), True),
        (Restart.TEMPORARY, Finish(), False),
        (Restart.TEMPORARY, Crash(), False),
    ],
    ids=[
        "permanent-normal-exit-restarts",
        "permanent-crash-restarts",
        "transient-normal-exit-retires",
        "transient-crash-restarts",
        "temporary-normal-exit-retires",
        "temporary-crash-retires",
    ],
)
async def test_the_restart_type_decides_whether_an_exited_child_comes_back(
    journal: Journal, restart: Restart, trigger: Finish | Crash, restarted: bool
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), restart=restart)
        await system.tell(addr("a"), trigger)
        await wait_all_tasks_blocked()

        assert journal.starts("a") == ([1, 2] if restarted else [1])
        assert system.is_registered(addr("a")) is restarted


@pytest.mark.parametrize(
    ("trigger", "error"),
    [(Finish(), None), (Crash(reason="kaput"), "RuntimeError: kaput")],
    ids=["normal-exit", "crash"],
)
async def test_child_exited_records_the_error_and_what_the_supervisor_did(
    tap: MemoryTap, journal: Journal, trigger: Finish | Crash, error: str | None
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), restart=Restart.TEMPORARY)
        await system.tell(addr("a"), trigger)
        await wait_all_tasks_blocked()

    [exited] = tap.of_type(ChildExited)
    assert (exited.supervisor, exited.child, exited.error, exited.action) == (
        "system",
        "worker:a",
        error,
        "retire",
    )


async def test_mail_queued_for_a_retired_actor_is_dead_lettered(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), restart=Restart.TEMPORARY)
        await system.tell(addr("a"), Finish())
        await system.tell(addr("a"), Note(text="too late"))
        await wait_all_tasks_blocked()

        [dead] = tap.of_type(DeadLetter)
        assert dead.envelope.payload == Note(text="too late")
        assert dead.cause is DeadLetterCause.UNDELIVERABLE
        assert journal.handled("a") == []


# ---------------------------------------------------------------- intensity & escalation


async def test_restarts_within_the_intensity_are_allowed(journal: Journal) -> None:
    async with open_actor_system(supervisor=SupervisorSpec(intensity=2)) as system:
        system.spawn(addr("a"), worker(journal))
        for _ in range(2):
            await system.tell(addr("a"), Crash())
            await wait_all_tasks_blocked()

        assert journal.starts("a") == [1, 2, 3]
        assert system.statistics().restarts == 2


async def test_one_restart_too_many_at_the_root_raises_from_open_actor_system(
    journal: Journal,
) -> None:
    with pytest.raises(RestartIntensityExceeded) as caught:
        async with open_actor_system(supervisor=SupervisorSpec(intensity=2)) as system:
            system.spawn(addr("a"), worker(journal))
            for _ in range(3):
                await system.tell(addr("a"), Crash(reason="again"))
                await wait_all_tasks_blocked()
            await trio.sleep_forever()

    assert caught.value.supervisor == "system"
    assert isinstance(caught.value.last, RuntimeError)
    assert str(caught.value.last) == "again"


async def test_restarts_older_than_the_period_do_not_count(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system(supervisor=SupervisorSpec(intensity=1, period=5)) as system:
        system.spawn(addr("a"), worker(journal))
        for _ in range(3):
            await system.tell(addr("a"), Crash())
            await trio.sleep(6)

        assert journal.starts("a") == [1, 2, 3, 4]


async def test_escalation_stops_the_other_children_before_raising(journal: Journal) -> None:
    with pytest.raises(RestartIntensityExceeded):
        async with open_actor_system(supervisor=SupervisorSpec(intensity=0)) as system:
            system.spawn(addr("a"), worker(journal))
            system.spawn(addr("b"), worker(journal))
            await system.tell(addr("b"), Crash())
            await trio.sleep_forever()

    assert journal.of("stopping") == ["a"]


async def test_a_nested_supervisor_that_exceeds_its_intensity_escalates_to_its_parent(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=0))
        system.root.start_child(team_child)
        system.spawn(addr("a"), worker(journal), supervisor=team)
        await system.tell(addr("a"), Crash())
        await wait_all_tasks_blocked()

        assert [e.supervisor for e in tap.of_type(SupervisorEscalated)] == ["team"]
        [exited] = events(tap, ChildExited, supervisor="system")
        assert exited.child == "team"
        assert exited.action is SupervisorAction.RESTART
        assert exited.error is not None
        assert exited.error.startswith("RestartIntensityExceeded: supervisor team exceeded")


async def test_a_restarted_nested_supervisor_restarts_its_children(journal: Journal) -> None:
    async with open_actor_system() as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=0))
        system.root.start_child(team_child)
        system.spawn(addr("a"), worker(journal), supervisor=team)
        await system.tell(addr("a"), Crash())
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="still there?"))
        await wait_all_tasks_blocked()

        assert journal.starts("a") == [1, 2]
        assert journal.handled("a") == [("still there?", 2)]


async def test_a_restarted_nested_supervisor_starts_with_a_fresh_restart_history(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=1))
        system.root.start_child(team_child)
        system.spawn(addr("a"), worker(journal), supervisor=team)
        for _ in range(3):
            await system.tell(addr("a"), Crash())
            await wait_all_tasks_blocked()

        assert system.root.restart_count == 1


async def test_escalation_that_reaches_the_root_raises_from_open_actor_system(
    journal: Journal,
) -> None:
    with pytest.raises(RestartIntensityExceeded) as caught:
        async with open_actor_system(supervisor=SupervisorSpec(intensity=0)) as system:
            team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=0))
            system.root.start_child(team_child)
            system.spawn(addr("a"), worker(journal), supervisor=team)
            await system.tell(addr("a"), Crash())
            await trio.sleep_forever()

    assert caught.value.supervisor == "system"
    assert isinstance(caught.value.last, RestartIntensityExceeded)
    assert caught.value.last.supervisor == "team"


# ---------------------------------------------------------------- shutdown


async def test_children_stop_in_reverse_start_order(journal: Journal) -> None:
    async with open_actor_system() as system:
        for key in "abc":
            system.spawn(addr(key), worker(journal))
        await wait_all_tasks_blocked()

    assert journal.of("stopping") == ["c", "b", "a"]


async def test_a_nested_supervisor_stops_its_children_in_its_place_in_the_order(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        team, team_child = system.supervisor_child("team", SupervisorSpec())
        system.root.start_child(team_child)
        system.spawn(addr("b"), worker(journal), supervisor=team)
        system.spawn(addr("c"), worker(journal), supervisor=team)
        system.spawn(addr("d"), worker(journal))
        await wait_all_tasks_blocked()

    assert journal.of("stopping") == ["d", "c", "b", "a"]


def _peers(system: ActorSystem) -> Supervisor:
    """A supervisor of peers under the root, which stops them all at once."""
    team, team_child = system.supervisor_child(
        "team", SupervisorSpec(stop_order=StopOrder.ALL_AT_ONCE)
    )
    system.root.start_child(team_child)
    return team


async def test_peers_stopped_all_at_once_each_get_their_shutdown_timeout_from_the_same_moment(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        team = _peers(system)
        for key, shutdown in (("a", 2), ("b", 3), ("c", 2)):
            system.spawn(addr(key), worker(journal), supervisor=team, shutdown=shutdown)
            await system.tell(addr(key), Hang())
        await wait_all_tasks_blocked()
        leaving = trio.current_time()

    stopped = [e for e in tap.of_type(ChildStopped) if e.supervisor == "team"]
    assert [(e.child, e.how) for e in stopped] == [
        ("worker:c", HowStopped.KILLED),
        ("worker:b", HowStopped.KILLED),
        ("worker:a", HowStopped.KILLED),
    ]
    # one at a time, the last would have been killed 2 + 3 + 2 seconds after the stop began
    assert [e.at - leaving for e in stopped] == pytest.approx([3, 3, 3])


async def test_peers_stopped_all_at_once_are_each_recorded_as_they_ended(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        team = _peers(system)
        system.spawn(addr("a"), worker(journal), supervisor=team, shutdown=2)
        await system.tell(addr("a"), Hang())
        for key in "bc":
            system.spawn(addr(key), worker(journal), supervisor=team, shutdown=5)
            await system.tell(addr(key), Nap(seconds=3))
        await wait_all_tasks_blocked()

    assert sorted(journal.of("napped")) == ["b", "c"]
    stopped = [e for e in tap.of_type(ChildStopped) if e.supervisor == "team"]
    assert [(e.child, e.how) for e in stopped] == [
        ("worker:c", HowStopped.GRACEFUL),
        ("worker:b", HowStopped.GRACEFUL),
        ("worker:a", HowStopped.KILLED),
    ]


async def test_a_graceful_stop_lets_the_handler_in_progress_finish(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), shutdown=5)
        await system.tell(addr("a"), Nap(seconds=3))
        await wait_all_tasks_blocked()

    assert journal.of("napped") == ["a"]
    assert [e.how for e in tap.of_type(ChildStopped)] == ["graceful"]


async def test_a_child_that_overruns_its_shutdown_timeout_is_cancelled(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), shutdown=2)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        leaving = trio.current_time()

    [stopped] = tap.of_type(ChildStopped)
    assert stopped.how is HowStopped.KILLED
    assert stopped.at - leaving == pytest.approx(2)


async def test_an_infinite_shutdown_timeout_waits_for_the_handler(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), shutdown=math.inf)
        await system.tell(addr("a"), Nap(seconds=3600))
        await wait_all_tasks_blocked()

    assert journal.of("napped") == ["a"]
    assert [e.how for e in tap.of_type(ChildStopped)] == ["graceful"]


async def test_terminate_child_stops_the_child_and_retires_its_address(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("b"), worker(journal))
        await wait_all_tasks_blocked()
        await system.root.terminate_child("worker:a")

        assert journal.of("stopping") == ["a"]
        assert system.root.which_children() == ["worker:b"]
        assert not system.is_registered(addr("a"))


async def test_a_child_terminated_while_news_of_its_crash_is_queued_stays_retired(
    autojump_clock: MockClock, journal: Journal, tap: MemoryTap
) -> None:
    """The supervisor is busy stopping another child; meanwhile a terminate is asked for a
    child that then crashes. The crash's news, queued behind the terminate, must not
    restart the child the terminate retired (it crashed the supervisor: the child was no
    longer in its list)."""
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("slow"), worker(journal), shutdown=1.0)
        system.spawn(addr("kid"), worker(journal))
        await system.tell(addr("slow"), Hang())
        await wait_all_tasks_blocked()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(system.root.terminate_child, "worker:slow")
            await wait_all_tasks_blocked()
            nursery.start_soon(system.root.terminate_child, "worker:kid")
            await wait_all_tasks_blocked()
            await system.tell(addr("kid"), Crash())

        assert journal.starts("kid") == [1]
        assert not system.is_registered(addr("kid"))
        assert system.root.which_children() == []
