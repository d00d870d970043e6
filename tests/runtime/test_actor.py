"""Actors: poison messages, ask/reply, timeouts, background work, clean shutdown."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    AskTimeout,
    DeadLetter,
    DeadLetterCause,
    Delivered,
    MailboxSpec,
    MemoryTap,
    SupervisorSpec,
    SystemClosed,
    Undeliverable,
    open_actor_system,
)
from tests.runtime.helpers import (
    Crash,
    CrashInBackground,
    Echo,
    Hang,
    Journal,
    LateEcho,
    Nap,
    Note,
    Silence,
    WorkInBackground,
    addr,
    worker,
)

# ---------------------------------------------------------------- poison messages


async def test_the_message_being_handled_at_a_crash_is_dead_lettered_as_crashed(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Crash(reason="poison"))
        await wait_all_tasks_blocked()

        [dead] = tap.of_type(DeadLetter)
        assert dead.envelope.payload == Crash(reason="poison")
        assert dead.cause is DeadLetterCause.CRASHED
        assert dead.reason == "RuntimeError: poison"


async def test_messages_queued_behind_a_poison_message_reach_the_restarted_incarnation(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Crash())
        await system.tell(addr("a"), Note(text="first"))
        await system.tell(addr("a"), Note(text="second"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("first", 2), ("second", 2)]


async def test_a_poison_message_is_not_redelivered_to_the_restarted_incarnation(
    journal: Journal,
) -> None:
    async with open_actor_system(supervisor=SupervisorSpec(intensity=10)) as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Crash())
        await wait_all_tasks_blocked()

        assert journal.starts("a") == [1, 2]


async def test_an_ask_whose_handler_crashes_raises_undeliverable_promptly(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        asked = trio.current_time()

        with pytest.raises(Undeliverable, match="crashed: RuntimeError: boom"):
            await system.ask(addr("a"), Crash(), timeout=60)
        assert trio.current_time() == asked


async def test_an_exception_in_background_work_crashes_the_actor(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), CrashInBackground())
        await wait_all_tasks_blocked()

        assert journal.starts("a") == [1, 2]


async def test_background_work_is_cancelled_when_its_incarnation_ends(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), WorkInBackground())
        await system.tell(addr("a"), Crash())
        await wait_all_tasks_blocked()

        assert ("background ended", "a", 1) in journal.entries


# ---------------------------------------------------------------- ordering


async def test_an_actor_handles_one_message_at_a_time_in_arrival_order(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Nap(seconds=5))
        await system.tell(addr("a"), Note(text="after the nap"))
        await system.tell(addr("a"), Nap(seconds=1))
        await trio.sleep(10)

        assert [e[0] for e in journal.entries[1:]] == ["napped", "handled", "napped"]


# ---------------------------------------------------------------- ask / reply


async def test_ask_returns_the_payload_of_the_reply(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        assert await system.ask(addr("a"), Echo(text="hello")) == Echo(text="hello")


class StepsOf(trio.abc.Instrument):
    """Counts the times trio resumes one task."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.steps += 1


async def test_an_ask_answered_at_once_resumes_the_asker_only_for_its_reply(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await wait_all_tasks_blocked()
        steps = StepsOf(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(steps)
        try:
            assert await system.ask(addr("a"), Echo(text="hello")) == Echo(text="hello")
        finally:
            trio.lowlevel.remove_instrument(steps)

    assert steps.steps == 1


async def test_a_reply_carries_the_correlation_id_of_its_request(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        await system.ask(addr("a"), Echo(text="hello"), sender=addr("asker"))

        request, reply = (e.envelope for e in tap.of_type(Delivered))
        assert request.correlation_id is not None
        assert (reply.correlation_id, reply.is_reply) == (request.correlation_id, True)
        assert (reply.sender, reply.recipient) == (addr("a"), addr("asker"))


async def test_concurrent_asks_each_get_the_reply_to_their_own_request(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    answers: dict[str, object] = {}
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        async def ask(text: str, delay: float) -> None:
            answers[text] = await system.ask(addr("a"), LateEcho(text=text, delay=delay))

        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(ask, f"q{i}", 10 - i)

    assert answers == {f"q{i}": Echo(text=f"q{i}") for i in range(10)}


async def test_correlation_ids_are_unique_per_ask(tap: MemoryTap, journal: Journal) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        for _ in range(3):
            await system.ask(addr("a"), Echo(text="again"))

        requests = [e.envelope for e in tap.of_type(Delivered) if not e.envelope.is_reply]
        assert len({r.correlation_id for r in requests}) == 3


async def test_a_reply_to_a_tell_goes_to_the_senders_mailbox(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("b"), worker(journal))
        await system.tell(addr("a"), Echo(text="ping"), sender=addr("b"))
        await wait_all_tasks_blocked()

        assert [e[:3] for e in journal.entries if e[0] == "reply"] == [
            ("reply", "b", Echo(text="ping"))
        ]


async def test_ask_raises_ask_timeout_when_no_reply_arrives_in_time(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        asked = trio.current_time()

        with pytest.raises(AskTimeout, match=r"worker:a did not reply within 5s"):
            await system.ask(addr("a"), Silence(), timeout=5)
        assert trio.current_time() - asked == pytest.approx(5)


async def test_ask_timeout_includes_waiting_for_room_in_a_full_mailbox(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1), shutdown=0)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="fills the mailbox"))
        asked = trio.current_time()

        with trio.fail_after(60), pytest.raises(AskTimeout):
            await system.ask(addr("a"), Echo(text="no room"), timeout=5)
        assert trio.current_time() - asked == pytest.approx(5)


async def test_a_reply_after_the_asker_gave_up_is_dead_lettered(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        with pytest.raises(AskTimeout):
            await system.ask(addr("a"), LateEcho(text="too slow", delay=5), timeout=1)
        await trio.sleep(10)

        [dead] = tap.of_type(DeadLetter)
        assert dead.envelope.payload == Echo(text="too slow")
        assert dead.envelope.is_reply
        assert dead.reason == "the asker stopped waiting"


async def test_an_ask_to_an_address_nobody_is_registered_at_raises_undeliverable() -> None:
    async with open_actor_system() as system:
        with pytest.raises(Undeliverable, match="no actor at worker:ghost"):
            await system.ask(addr("ghost"), Echo(text="hello?"))


async def test_an_ask_whose_handler_is_killed_raises_undeliverable(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), shutdown=1)

        async def kill_a() -> None:
            await wait_all_tasks_blocked()
            await system.root.terminate_child("worker:a")

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_a)
                with pytest.raises(Undeliverable):
                    await system.ask(addr("a"), Hang())


# ---------------------------------------------------------------- shutdown & cancellation


def _all_tasks() -> set[trio.lowlevel.Task]:
    found: set[trio.lowlevel.Task] = set()
    pending = [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        if task is None:
            continue
        found.add(task)
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return found


async def test_cancelling_the_system_leaves_no_task_behind(journal: Journal) -> None:
    before = _all_tasks()
    with trio.CancelScope() as scope:
        async with open_actor_system() as system:
            system.spawn(addr("idle"), worker(journal))
            system.spawn(addr("busy"), worker(journal))
            system.spawn(addr("background"), worker(journal))
            team, team_child = system.supervisor_child("team", SupervisorSpec())
            system.root.start_child(team_child)
            system.spawn(addr("nested"), worker(journal), supervisor=team)
            await system.tell(addr("busy"), Hang())
            await system.tell(addr("background"), WorkInBackground())
            await wait_all_tasks_blocked()
            assert len(_all_tasks()) > len(before)
            scope.cancel()
            await trio.sleep_forever()

    assert _all_tasks() == before
    assert journal.of("background ended") == ["background"]


async def test_cancelling_the_system_dead_letters_leftover_mail(
    tap: MemoryTap, journal: Journal
) -> None:
    with trio.CancelScope() as scope:
        async with open_actor_system(taps=[tap]) as system:
            system.spawn(addr("a"), worker(journal))
            await system.tell(addr("a"), Hang())
            await wait_all_tasks_blocked()
            await system.tell(addr("a"), Note(text="left over 1"))
            await system.tell(addr("a"), Note(text="left over 2"))
            scope.cancel()

    left_over = [
        e.envelope.payload for e in tap.of_type(DeadLetter) if isinstance(e.envelope.payload, Note)
    ]
    assert left_over == [Note(text="left over 1"), Note(text="left over 2")]


async def test_a_message_whose_handler_is_cancelled_is_dead_lettered(
    tap: MemoryTap, journal: Journal
) -> None:
    with trio.CancelScope() as scope:
        async with open_actor_system(taps=[tap]) as system:
            system.spawn(addr("a"), worker(journal))
            await system.tell(addr("a"), Hang())
            await wait_all_tasks_blocked()
            scope.cancel()

    [dead] = tap.of_type(DeadLetter)
    assert dead.envelope.payload == Hang()
    assert dead.cause is DeadLetterCause.UNDELIVERABLE


async def test_leaving_the_block_dead_letters_mail_the_actors_did_not_get_to(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), shutdown=0)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="left over"))

    assert Note(text="left over") in [e.envelope.payload for e in tap.of_type(DeadLetter)]


async def test_telling_after_shutdown_raises_system_closed(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

    with pytest.raises(SystemClosed):
        await system.tell(addr("a"), Note(text="anyone?"))


async def test_spawning_after_shutdown_raises_system_closed(journal: Journal) -> None:
    async with open_actor_system() as system:
        pass

    with pytest.raises(SystemClosed):
        system.spawn(addr("a"), worker(journal))


async def test_spawning_twice_at_one_address_is_refused(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        with pytest.raises(ValueError, match="already registered at worker:a"):
            system.spawn(addr("a"), worker(journal))
