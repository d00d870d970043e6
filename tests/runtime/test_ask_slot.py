"""An ask's reply slot: it parks its asker directly, so it must wake that asker exactly once,
whichever comes first of the reply (or error) and the asker's cancellation."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    ActorSystem,
    CalleeStopped,
    MailboxSpec,
    Undeliverable,
    open_actor_system,
)
from conclave.runtime.asks import _PendingReply
from tests.runtime.helpers import Hang, Journal, Note, Stash, addr, worker


async def test_a_slot_settled_before_its_wait_returns_at_once_after_a_checkpoint() -> None:
    slot = _PendingReply()
    slot.settle()
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await slot.wait()


@pytest.mark.parametrize("cancel_first", [True, False])
async def test_a_waiter_raced_by_settle_and_cancel_wakes_once_with_the_first(
    cancel_first: bool,
) -> None:
    slot = _PendingReply()
    woke: list[str] = []
    scope = trio.CancelScope()

    async def wait() -> None:
        with scope:
            await slot.wait()
            woke.append("settled")
            await trio.sleep_forever()
        woke.append("left")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await wait_all_tasks_blocked()
        if cancel_first:
            scope.cancel()
            slot.settle()
        else:
            slot.settle()
            scope.cancel()
        slot.settle()  # a second settle (a late reply) must not reschedule anyone

    assert woke == (["left"] if cancel_first else ["settled", "left"])
    assert slot.waiter is None


async def test_settling_wakes_the_asker_protected_from_keyboard_interrupt(
    reschedules: list[bool],
) -> None:
    """As ``trio.Event.set`` is: an interrupt between forgetting the waiter and rescheduling
    it would leave the asker parked on a slot that says it is settled."""
    slot = _PendingReply()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(slot.wait)
        await wait_all_tasks_blocked()
        slot.settle()
    assert reschedules == [True]


async def test_an_ask_taken_and_never_answered_fails_with_callee_stopped_at_shutdown(
    journal: Journal,
) -> None:
    outcomes: list[BaseException | object] = []

    async def ask(system: ActorSystem) -> None:
        try:
            outcomes.append(await system.ask(addr("callee"), Stash()))
        except Undeliverable as exc:
            outcomes.append(exc)

    async with trio.open_nursery() as nursery, open_actor_system() as system:
        system.spawn(addr("callee"), worker(journal))
        nursery.start_soon(ask, system)
        await wait_all_tasks_blocked()
        assert system.pending_requests(addr("callee")) == 1

    assert len(outcomes) == 1
    assert isinstance(outcomes[0], CalleeStopped)


async def test_an_ask_waiting_for_room_fails_once_with_undeliverable_at_shutdown(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    outcomes: list[BaseException | object] = []

    async def ask(system: ActorSystem) -> None:
        try:
            outcomes.append(await system.ask(addr("callee"), Note(text="waits for room")))
        except Undeliverable as exc:
            outcomes.append(exc)

    async with trio.open_nursery() as nursery, open_actor_system() as system:
        system.spawn(
            addr("callee"), worker(journal), mailbox=MailboxSpec(capacity=1), kill_timeout=1
        )
        await system.tell(addr("callee"), Hang())
        await wait_all_tasks_blocked()
        await system.tell(addr("callee"), Note(text="fills"))
        nursery.start_soon(ask, system)
        await wait_all_tasks_blocked()
        assert system.mailbox_statistics(addr("callee")).blocked_senders == 1

    assert len(outcomes) == 1
    assert isinstance(outcomes[0], Undeliverable)
