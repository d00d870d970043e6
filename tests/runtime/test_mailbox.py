"""Mailboxes: bounded channels with an explicit overflow policy and a statistics() record."""

from __future__ import annotations

import math

import attrs
import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Address,
    ChildStopped,
    Envelope,
    Mailbox,
    MailboxFull,
    MailboxSpec,
    MemoryTap,
    Overflow,
    open_actor_system,
)
from conclave.runtime.mailbox import UNYIELDED_RECEIVES
from tests.runtime.helpers import Journal, Nap, Note, addr, envelope, worker

# ---------------------------------------------------------------- Overflow.BLOCK


async def test_a_sender_to_a_full_blocking_mailbox_waits_until_the_actor_takes_a_message(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    sent_at: list[float] = []
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1))
        await system.tell(addr("a"), Nap(seconds=10))
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="fills the mailbox"))

        async def send_one_more() -> None:
            await system.tell(addr("a"), Note(text="must wait"))
            sent_at.append(trio.current_time())

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_one_more)

    assert sent_at == [pytest.approx(start + 10)]


async def test_a_blocked_sender_shows_in_the_statistics(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1))
        await system.tell(addr("a"), Nap(seconds=10))
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="fills the mailbox"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(system.tell, addr("a"), Note(text="must wait"))
            await wait_all_tasks_blocked()

            stats = system.mailbox_statistics(addr("a"))
            assert (stats.queued, stats.blocked_senders) == (1, 1)


async def test_tell_nowait_to_a_full_blocking_mailbox_raises_would_block(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1))
        await system.tell(addr("a"), Nap(seconds=10))
        await wait_all_tasks_blocked()
        system.tell_nowait(addr("a"), Note(text="fills the mailbox"))

        with pytest.raises(trio.WouldBlock):
            system.tell_nowait(addr("a"), Note(text="no room"))


async def test_an_unbounded_mailbox_never_blocks() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=math.inf))
    for i in range(10_000):
        box.send_nowait(envelope(str(i)))

    assert box.statistics().queued == 10_000


async def test_blocked_senders_envelopes_move_in_in_the_order_they_blocked() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1))
    box.send_nowait(envelope("queued"))
    async with trio.open_nursery() as nursery:
        for text in ("first blocked", "second blocked"):
            nursery.start_soon(box.send, envelope(text))
            await wait_all_tasks_blocked()

        received = [await box.receive() for _ in range(3)]

    assert received == [envelope("queued"), envelope("first blocked"), envelope("second blocked")]
    assert (box.statistics().accepted, box.statistics().blocked_senders) == (3, 0)


async def test_a_blocked_send_that_is_cancelled_enqueues_nothing() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1))
    box.send_nowait(envelope("queued"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.send, envelope("cancelled"))
        await wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()

    assert box.drain() == [envelope("queued")]
    assert (box.statistics().accepted, box.statistics().blocked_senders) == (1, 0)


async def test_a_rendezvous_mailbox_hands_a_blocked_senders_envelope_to_the_receiver() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=0))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.send, envelope("handed over"))
        await wait_all_tasks_blocked()

        assert await box.receive() == envelope("handed over")
    assert box.statistics().queued == 0


async def test_closing_ends_a_waiting_receive_with_closed_resource_error() -> None:
    box = Mailbox(Address("box"), MailboxSpec())
    errors: list[BaseException] = []

    async def receive() -> None:
        try:
            await box.receive()
        except trio.ClosedResourceError as exc:
            errors.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        await wait_all_tasks_blocked()
        box.close()

    assert len(errors) == 1
    assert box.statistics().waiting_receivers == 0


async def test_retiring_takes_the_envelopes_of_blocked_senders_and_says_so() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1))
    box.send_nowait(envelope("queued"))
    blocked = envelope("blocked")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.send, blocked)
        await wait_all_tasks_blocked()

        assert box.retire() == [envelope("queued"), blocked]
    assert box.was_drained(blocked)


async def test_receives_of_queued_mail_let_other_tasks_run_once_every_few_messages() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=math.inf))
    for i in range(3 * UNYIELDED_RECEIVES):
        box.send_nowait(envelope(str(i)))
    seen: list[int] = []
    """How many envelopes the receiver had taken each time the other task ran."""

    async def other_task() -> None:
        while True:
            seen.append(box.statistics().accepted - box.statistics().queued)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        await trio.lowlevel.checkpoint()
        for _ in range(3 * UNYIELDED_RECEIVES):
            await box.receive()
        nursery.cancel_scope.cancel()

    # trio runs the two tasks in either order each turn, so the receiver may take one
    # burst at the end of a turn and the next at the start of the following one.
    steps = zip([0, *seen], [*seen, 3 * UNYIELDED_RECEIVES], strict=True)
    assert all(taken % UNYIELDED_RECEIVES == 0 for taken in seen)
    assert all(b - a <= 2 * UNYIELDED_RECEIVES for a, b in steps)


async def test_a_cancelled_receive_takes_nothing_even_with_mail_queued() -> None:
    box = Mailbox(Address("box"), MailboxSpec())
    box.send_nowait(envelope("stays queued"))
    with trio.CancelScope() as scope:
        scope.cancel()
        await box.receive()

    assert scope.cancelled_caught
    assert box.statistics().queued == 1


# ---------------------------------------------------------------- Overflow.FAIL_FAST


async def test_tell_to_a_full_fail_fast_mailbox_raises_mailbox_full(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    spec = MailboxSpec(capacity=1, overflow=Overflow.FAIL_FAST)
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=spec)
        await system.tell(addr("a"), Nap(seconds=10))
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="fills the mailbox"))

        with pytest.raises(MailboxFull):
            await system.tell(addr("a"), Note(text="no room"))


async def test_tell_nowait_to_a_full_fail_fast_mailbox_raises_mailbox_full() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1, overflow=Overflow.FAIL_FAST))
    box.send_nowait(envelope("fills the mailbox"))

    with pytest.raises(MailboxFull):
        box.send_nowait(envelope("no room"))


async def test_mailbox_full_names_the_address_the_capacity_and_what_to_do() -> None:
    box = Mailbox(Address("agent", "alice"), MailboxSpec(capacity=2, overflow=Overflow.FAIL_FAST))
    box.send_nowait(envelope("1"))
    box.send_nowait(envelope("2"))

    with pytest.raises(MailboxFull) as caught:
        await box.send(envelope("3"))
    assert (caught.value.address, caught.value.capacity) == (Address("agent", "alice"), 2)
    assert "mailbox of agent:alice is full (2 queued)" in str(caught.value)
    assert "overflow='block'" in str(caught.value)


# ---------------------------------------------------------------- statistics()


async def test_statistics_report_queued_peak_accepted_and_rejected() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=3, overflow=Overflow.FAIL_FAST))
    for i in range(3):
        box.send_nowait(envelope(str(i)))
    with pytest.raises(MailboxFull):
        box.send_nowait(envelope("rejected"))
    await box.receive()
    await box.receive()

    stats = box.statistics()
    assert (stats.queued, stats.peak_queued, stats.accepted, stats.rejected) == (1, 3, 3, 1)


async def test_statistics_report_the_spec_and_the_address() -> None:
    box = Mailbox(Address("box", "1"), MailboxSpec(capacity=7, overflow=Overflow.FAIL_FAST))

    stats = box.statistics()
    assert (stats.address, stats.capacity, stats.overflow) == (
        Address("box", "1"),
        7,
        Overflow.FAIL_FAST,
    )


async def test_statistics_count_receivers_waiting_for_mail() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.receive)
        await wait_all_tasks_blocked()

        assert box.statistics().waiting_receivers == 1
        box.send_nowait(envelope("wake up"))


async def test_statistics_are_a_frozen_record() -> None:
    stats = Mailbox(Address("box"), MailboxSpec()).statistics()

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stats.queued = 5  # type: ignore[misc]


# ---------------------------------------------------------------- wake


async def test_wake_ends_the_wait_of_a_receiver_with_none() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1))
    got: list[Envelope | None] = []

    async def receive() -> None:
        got.append(await box.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        await wait_all_tasks_blocked()
        box.wake()

    assert got == [None]


async def test_wake_with_nobody_waiting_leaves_nothing_in_the_mailbox() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=1))
    box.wake()
    box.send_nowait(envelope("real mail"))

    assert await box.receive() == envelope("real mail")
    assert (box.statistics().queued, box.statistics().accepted) == (0, 1)


async def test_an_idle_actor_with_a_rendezvous_mailbox_stops_gracefully(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=0))
        await wait_all_tasks_blocked()

    assert journal.of("stopping") == ["a"]
    assert [e.how for e in tap.of_type(ChildStopped)] == ["graceful"]


# ---------------------------------------------------------------- spec validation


@pytest.mark.parametrize("capacity", [-1, 1.5, math.nan])
def test_a_capacity_that_is_not_a_whole_number_or_infinity_is_rejected(capacity: float) -> None:
    with pytest.raises(ValueError, match="mailbox capacity must be a whole number"):
        MailboxSpec(capacity=capacity)
