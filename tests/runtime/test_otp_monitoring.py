"""An ask monitors its callee (gen_server:call style), replies are given once, and an actor
cannot deadlock by asking itself."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Actor,
    ActorContext,
    CalleeStopped,
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Envelope,
    MemoryTap,
    Message,
    SelfAsk,
    SupervisorSpec,
    message,
    open_actor_system,
)
from conclave.runtime.system import ActorSystem
from tests.runtime.helpers import (
    AnswerStashed,
    Crash,
    CrashInBackground,
    Echo,
    Finish,
    Hang,
    Journal,
    Nap,
    ReplyTwice,
    Stash,
    addr,
    worker,
)


async def _stash_then(system: ActorSystem, *afterwards: Message) -> CalleeStopped:
    """Ask worker:a to stash a request; once it has taken it, tell it ``afterwards``.

    Returns the error the ask raised; fails the test if the ask hangs or returns.
    """
    async with trio.open_nursery() as nursery:

        async def then() -> None:
            await wait_all_tasks_blocked()
            for payload in afterwards:
                await system.tell(addr("a"), payload)

        nursery.start_soon(then)
        with trio.fail_after(60), pytest.raises(CalleeStopped) as caught:
            await system.ask(addr("a"), Stash())
    return caught.value


# ---------------------------------------------------------------- the callee's incarnation ends


async def test_an_ask_fails_at_once_when_the_incarnation_that_took_it_crashes(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        asked = trio.current_time()

        error = await _stash_then(system, CrashInBackground())

        assert trio.current_time() == asked
        assert error.address == addr("a")
        assert "worker:a (incarnation 1) crashed" in str(error)
        assert "RuntimeError: background work failed" in str(error)


async def test_a_handler_that_crashes_its_actor_fails_the_asks_that_incarnation_took(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        error = await _stash_then(system, Crash(reason="poison"))

        assert "crashed (RuntimeError: poison)" in str(error)


async def test_an_ask_fails_when_the_incarnation_that_took_it_stops_gracefully(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        error = await _stash_then(system, Finish())

        assert "worker:a (incarnation 1) stopped without replying" in str(error)


async def test_an_ask_fails_when_the_incarnation_that_took_it_is_cancelled(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), shutdown=0)

        async def kill_a() -> None:
            await wait_all_tasks_blocked()
            await system.root.terminate_child("worker:a")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(kill_a)
            error = await _stash_then(system, Hang())

        assert "worker:a (incarnation 1) was cancelled without replying" in str(error)


async def test_a_request_its_incarnation_took_and_never_answered_is_dead_lettered(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))

        await _stash_then(system, Finish())

        [dead] = [e for e in tap.of_type(DeadLetter) if e.envelope.payload == Stash()]
        assert dead.cause is DeadLetterCause.UNDELIVERABLE
        assert dead.reason.startswith("worker:a (incarnation 1) stopped without replying")


async def test_the_error_tells_the_caller_to_ask_again(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        error = await _stash_then(system, Finish())

        assert "ask again" in str(error)


async def test_the_next_incarnation_answers_a_caller_that_asks_again(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await _stash_then(system, Crash())

        assert await system.ask(addr("a"), Echo(text="again")) == Echo(text="again")
        assert journal.starts("a") == [1, 2]


async def test_a_request_still_queued_when_its_actor_crashes_reaches_the_next_incarnation(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Nap(seconds=5))
        await system.tell(addr("a"), Crash())

        with trio.fail_after(60):
            assert await system.ask(addr("a"), Echo(text="queued")) == Echo(text="queued")
        assert journal.starts("a") == [1, 2]


async def test_a_stashed_request_answered_later_by_the_same_incarnation_succeeds(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        async with trio.open_nursery() as nursery:

            async def answer_later() -> None:
                await wait_all_tasks_blocked()
                await system.tell(addr("a"), AnswerStashed())

            nursery.start_soon(answer_later)
            assert await system.ask(addr("a"), Stash()) == Echo(text="later")


async def test_an_incarnation_forgets_the_requests_it_answered(journal: Journal) -> None:
    """The per-incarnation bookkeeping is O(1) per request and does not grow with traffic:
    a long-lived actor that answered a thousand asks holds nothing for them."""
    async with open_actor_system(supervisor=SupervisorSpec(intensity=0)) as system:
        system.spawn(addr("a"), worker(journal))
        for i in range(1000):
            await system.ask(addr("a"), Echo(text=str(i)))

        assert system.pending_requests(addr("a")) == 0


# ---------------------------------------------------------------- one reply per ask


async def test_a_second_reply_to_an_ask_does_not_replace_the_first(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))

        assert await system.ask(addr("a"), ReplyTwice()) == Echo(text="first")


async def test_a_second_reply_to_an_ask_is_dead_lettered_and_only_the_first_delivered(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        await system.ask(addr("a"), ReplyTwice())

    replies = [e.envelope.payload for e in tap.of_type(Delivered) if e.envelope.is_reply]
    assert replies == [Echo(text="first")]
    [dead] = tap.of_type(DeadLetter)
    assert dead.envelope.payload == Echo(text="second")
    assert dead.reason == "the request was already answered; the first reply stands"


# ---------------------------------------------------------------- asking yourself


@message(kind="rt_test.ask_self")
class AskSelf(Message):
    from_background: bool = False


class SelfAsker(Actor):
    """Answers ``AskSelf`` with what asking itself gave: the reply, or the error's text."""

    def __init__(self, context: ActorContext) -> None:
        super().__init__(context)

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if isinstance(payload, AskSelf):
            if payload.from_background:
                self.context.start_soon(self._ask_self, envelope)
            else:
                await self._ask_self(envelope)
        elif isinstance(payload, Echo):
            self.context.reply(envelope, payload)

    async def _ask_self(self, request: Envelope) -> None:
        try:
            answer = await self.context.ask(self.context.address, Echo(text="me"))
        except SelfAsk as exc:
            answer = Echo(text=f"{type(exc).__name__}: {exc}")
        self.context.reply(request, answer)


async def test_asking_yourself_from_your_own_handler_raises_at_once_naming_the_address(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("self"), SelfAsker)

        with trio.fail_after(60):
            answer = await system.ask(addr("self"), AskSelf())

        assert isinstance(answer, Echo)
        assert answer.text.startswith("SelfAsk: worker:self asked itself")


async def test_a_request_an_actor_sent_itself_from_its_handler_is_dead_lettered(
    autojump_clock: trio.testing.MockClock, tap: MemoryTap
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("self"), SelfAsker)
        with trio.fail_after(60):
            await system.ask(addr("self"), AskSelf())

    [dead] = tap.of_type(DeadLetter)
    assert dead.envelope.payload == Echo(text="me")
    assert dead.reason == "its own actor asked it from inside its handler"


class Deferrer(Actor):
    """Puts each request back in its own mailbox once before answering it (through the
    system it is given: an actor's context does not hand out the system)."""

    def __init__(self, context: ActorContext, system: ActorSystem) -> None:
        super().__init__(context)
        self.system = system
        self.deferred: set[int | None] = set()

    async def handle(self, envelope: Envelope) -> None:
        if envelope.correlation_id in self.deferred:
            self.context.reply(envelope, Echo(text="after deferring"))
        else:
            self.deferred.add(envelope.correlation_id)
            await self.system.send_envelope(envelope)


async def test_an_actor_may_put_a_request_back_in_its_own_mailbox(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("deferrer"), lambda context: Deferrer(context, system))

        with trio.fail_after(60):
            answer = await system.ask(addr("deferrer"), Echo(text="later please"))

        assert answer == Echo(text="after deferring")


async def test_asking_yourself_from_background_work_is_answered_by_your_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("self"), SelfAsker)

        with trio.fail_after(60):
            answer = await system.ask(addr("self"), AskSelf(from_background=True))

        assert answer == Echo(text="me")
