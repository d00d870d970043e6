"""Sending is all-or-nothing under cancellation, as trio's channels are; a sender never
hears "delivered" for mail its recipient's retirement dead-lettered."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    DELIVER,
    Address,
    DeadLetter,
    Delivered,
    Envelope,
    Facts,
    Hold,
    Mailbox,
    MailboxSpec,
    MemoryTap,
    Overflow,
    Undeliverable,
    open_actor_system,
)
from conclave.runtime.routing import Decision
from tests.runtime.helpers import Hang, Journal, Note, addr, events, worker

NOTE = Envelope(sender=None, recipient=Address("worker", "a"), payload=Note(text="x"))


def _door_open(facts: Facts) -> bool:
    return bool(facts.get("door_open"))


class HoldNotesUntilTheDoorOpens:
    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, Note) and not _door_open(facts):
            return Hold(_door_open, reason="door closed", watch=frozenset({"door_open"}))
        return DELIVER


@pytest.mark.parametrize("overflow", list(Overflow), ids=[o.value for o in Overflow])
async def test_a_tell_that_raised_cancelled_is_never_handled(
    tap: MemoryTap, journal: Journal, overflow: Overflow
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(overflow=overflow))
        with trio.CancelScope() as scope:
            scope.cancel()
            await system.tell(addr("a"), Note(text="cancelled"))
        await wait_all_tasks_blocked()

        assert scope.cancelled_caught
        assert journal.handled("a") == []
        assert events(tap, Delivered) == []


@pytest.mark.parametrize("overflow", list(Overflow), ids=[o.value for o in Overflow])
async def test_a_mailbox_send_that_raised_cancelled_enqueued_nothing(overflow: Overflow) -> None:
    box = Mailbox(addr("a"), MailboxSpec(overflow=overflow))
    with trio.CancelScope() as scope:
        scope.cancel()
        await box.send(NOTE)

    assert scope.cancelled_caught
    assert box.statistics().queued == 0


async def test_a_held_tell_that_raised_cancelled_is_not_delivered_when_its_hold_ends(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldNotesUntilTheDoorOpens())
        with trio.CancelScope() as scope:
            scope.cancel()
            await system.tell(addr("a"), Note(text="cancelled"))
        system.update_facts({"door_open": True})
        await wait_all_tasks_blocked()

        assert system.held() == []
        assert journal.handled("a") == []


@pytest.mark.parametrize("held", [False, True], ids=["delivered", "held"])
async def test_a_tell_whose_deadline_expires_as_it_is_routed_is_all_or_nothing(
    autojump_clock: trio.testing.MockClock, journal: Journal, held: bool
) -> None:
    """The deadline passes, but trio delivers it only at the next schedule point: by then
    the message was routed, so the tell must return, not raise ``Cancelled``."""
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        if held:
            system.add_rule(HoldNotesUntilTheDoorOpens())
        with trio.CancelScope() as scope:
            scope.deadline = trio.current_time()
            await system.tell(addr("a"), Note(text="on the deadline"))
        system.update_facts({"door_open": True})
        await wait_all_tasks_blocked()

        assert scope.cancelled_caught is (journal.handled("a") == [])


async def test_a_held_tell_that_returned_is_delivered_when_its_hold_ends(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldNotesUntilTheDoorOpens())
        await system.tell(addr("a"), Note(text="held"))
        system.update_facts({"door_open": True})
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("held", 1)]


async def test_a_tell_cancelled_while_waiting_for_room_is_never_handled(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1), shutdown=0)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="fills the mailbox"))
        with trio.move_on_after(5):
            await system.tell(addr("a"), Note(text="gave up"))

        stats = system.mailbox_statistics(addr("a"))
        assert (stats.queued, stats.accepted, stats.blocked_senders) == (1, 2, 0)


async def test_a_sender_blocked_on_a_mailbox_whose_actor_retires_gets_undeliverable(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1), shutdown=0)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="fills the mailbox"))

        async with trio.open_nursery() as nursery:

            async def blocked_sender() -> None:
                with pytest.raises(Undeliverable, match="worker:a has stopped"):
                    await system.tell(addr("a"), Note(text="blocked"))

            nursery.start_soon(blocked_sender)
            await wait_all_tasks_blocked()
            await system.root.terminate_child("worker:a")

    blocked = Note(text="blocked")
    assert [e for e in tap.of_type(Delivered) if e.envelope.payload == blocked] == []
    assert [e.envelope.payload for e in tap.of_type(DeadLetter)].count(blocked) == 1
