"""Mailboxes under races: cancellation against hand-over, close and retire with tasks
parked, and KeyboardInterrupt protection of every path that wakes a parked task."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Actor,
    ActorContext,
    Address,
    Envelope,
    Mailbox,
    MailboxFull,
    MailboxSpec,
    Overflow,
    open_actor_system,
)
from conclave.runtime.mailbox import UNYIELDED_RECEIVES
from tests.runtime.helpers import Note, addr, envelope


def mailbox(capacity: float) -> Mailbox:
    return Mailbox(Address("box"), MailboxSpec(capacity=capacity))


async def test_mail_handed_to_a_receiver_just_before_its_cancel_is_returned_not_lost() -> None:
    box = mailbox(1)
    got: list[Envelope | None] = []
    handed = envelope("handed")
    scope = trio.CancelScope()
    async with trio.open_nursery() as nursery:

        async def receive() -> None:
            with scope:
                got.append(await box.receive())

        nursery.start_soon(receive)
        await wait_all_tasks_blocked()
        box.send_nowait(handed)
        scope.cancel()

    assert got == [handed]
    assert box.statistics().queued == 0


async def test_mail_sent_just_after_a_receivers_cancel_stays_queued() -> None:
    box = mailbox(1)
    got: list[Envelope | None] = []
    queued = envelope("queued")
    async with trio.open_nursery() as nursery:
        scope = trio.CancelScope()

        async def receive() -> None:
            with scope:
                got.append(await box.receive())

        nursery.start_soon(receive)
        await wait_all_tasks_blocked()
        scope.cancel()
        box.send_nowait(queued)

    assert got == []
    assert box.receive_nowait() is queued


@pytest.mark.parametrize("cancel_first", [True, False])
async def test_a_blocked_sender_raced_by_its_cancel_sent_exactly_when_it_returned(
    cancel_first: bool,
) -> None:
    box = mailbox(1)
    box.send_nowait(envelope("fills"))
    blocked = envelope("blocked")
    returned: list[bool] = []
    scope = trio.CancelScope()
    async with trio.open_nursery() as nursery:

        async def send() -> None:
            with scope:
                await box.send(blocked)
                returned.append(True)

        nursery.start_soon(send)
        await wait_all_tasks_blocked()
        if cancel_first:
            scope.cancel()
            box.receive_nowait()
        else:
            box.receive_nowait()
            scope.cancel()

    left = box.drain()
    assert (blocked in left) == bool(returned) == (not cancel_first)
    assert box.statistics().accepted == 1 + len(returned)


async def test_closing_wakes_parked_senders_and_receivers_with_closed_resource_error() -> None:
    full, empty = mailbox(0), mailbox(0)
    raised: list[str] = []

    async def expect_closed(name: str, wait: Callable[[], Any]) -> None:
        with pytest.raises(trio.ClosedResourceError):
            await wait()
        raised.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(expect_closed, "sender", lambda: full.send(envelope("never")))
        nursery.start_soon(expect_closed, "receiver", empty.receive)
        await wait_all_tasks_blocked()
        full.close()
        empty.close()

    assert sorted(raised) == ["receiver", "sender"]
    for box in (full, empty):
        stats = box.statistics()
        assert (stats.accepted, stats.blocked_senders, stats.waiting_receivers) == (0, 0, 0)


async def test_retiring_returns_queued_then_blocked_mail_in_order_and_wakes_each_sender() -> None:
    box = mailbox(1)
    box.send_nowait(envelope("queued"))
    woken: list[str] = []

    async def send(text: str) -> None:
        await box.send(envelope(text))
        woken.append(text)

    async with trio.open_nursery() as nursery:
        for text in ("first", "second"):
            nursery.start_soon(send, text)
            await wait_all_tasks_blocked()
        retired = box.retire()

    assert [e.payload for e in retired] == [Note(text=t) for t in ("queued", "first", "second")]
    assert all(box.was_drained(e) for e in retired)
    assert sorted(woken) == ["first", "second"]
    stats = box.statistics()
    assert (stats.accepted, stats.queued, stats.blocked_senders) == (3, 0, 0)


async def test_an_unbounded_mailbox_queues_without_waiting_and_hands_over_in_order() -> None:
    box = mailbox(math.inf)
    for n in range(1000):
        box.send_nowait(envelope(str(n)))
    assert [box.receive_nowait().payload for _ in range(1000)] == [
        Note(text=str(n)) for n in range(1000)
    ]


# ------------------------------------------------------------- KeyboardInterrupt protection


async def test_wake_reschedules_its_receiver_protected_from_keyboard_interrupt(
    reschedules: list[bool],
) -> None:
    box = mailbox(1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(box.receive)
        await wait_all_tasks_blocked()
        box.wake()
    assert reschedules == [True]


async def test_close_reschedules_parked_tasks_protected_from_keyboard_interrupt(
    reschedules: list[bool],
) -> None:
    box = mailbox(1)

    async def receive() -> None:
        with pytest.raises(trio.ClosedResourceError):
            await box.receive()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        await wait_all_tasks_blocked()
        box.close()
    assert reschedules == [True]


async def test_retiring_closes_protected_from_keyboard_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between draining and closing, the drained mail exists only in ``retire``'s hands."""
    protected: list[bool] = []
    close = Mailbox.close

    def recording(box: Mailbox) -> None:
        protected.append(trio.lowlevel.currently_ki_protected())
        close(box)

    monkeypatch.setattr(Mailbox, "close", recording)
    box = mailbox(1)
    box.send_nowait(envelope("queued"))
    box.retire()
    assert protected == [True]


async def test_draining_takes_each_envelope_protected_from_keyboard_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An envelope taken and not yet in the drained list would be lost to an interrupt."""
    protected: list[bool] = []
    receive_nowait = Mailbox.receive_nowait

    def recording(box: Mailbox) -> Envelope:
        protected.append(trio.lowlevel.currently_ki_protected())
        return receive_nowait(box)

    monkeypatch.setattr(Mailbox, "receive_nowait", recording)
    box = mailbox(2)
    box.send_nowait(envelope("one"))
    box.send_nowait(envelope("two"))
    assert len(box.drain()) == 2
    assert protected == [True, True, True]


async def test_a_fail_fast_rendezvous_mailbox_hands_over_only_to_a_waiting_receiver() -> None:
    box = Mailbox(Address("box"), MailboxSpec(capacity=0, overflow=Overflow.FAIL_FAST))
    with pytest.raises(MailboxFull):
        box.send_nowait(envelope("nobody waits"))
    got: list[Envelope | None] = []
    handed = envelope("handed")
    async with trio.open_nursery() as nursery:

        async def receive() -> None:
            got.append(await box.receive())

        nursery.start_soon(receive)
        await wait_all_tasks_blocked()
        box.send_nowait(handed)

    assert got == [handed]
    stats = box.statistics()
    assert (stats.accepted, stats.rejected, stats.queued, stats.peak_queued) == (1, 1, 0, 0)


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("capacity", [0, 1, 3])
async def test_a_blocked_senders_envelope_moving_in_never_lifts_the_peak_past_the_capacity(
    capacity: int,
) -> None:
    box = mailbox(capacity)
    for n in range(capacity):
        box.send_nowait(envelope(str(n)))
    async with trio.open_nursery() as nursery:
        for n in range(2):
            nursery.start_soon(box.send, envelope(f"blocked {n}"))
            await wait_all_tasks_blocked()
        for _ in range(capacity + 2):
            box.receive_nowait()

    stats = box.statistics()
    assert (stats.peak_queued, stats.accepted, stats.queued) == (capacity, capacity + 2, 0)


# ---------------------------------------------------------------- bursts


class SelfMailer(Actor):
    """Mails itself without awaiting anything, for ever: only its receives can yield."""

    def __init__(self, context: ActorContext, handled: list[int]) -> None:
        super().__init__(context)
        self.handled = handled

    async def handle(self, envelope: Envelope) -> None:
        self.handled.append(1)
        self.context.tell_nowait(self.context.address, Note(text="again"))


async def test_an_actor_mailing_itself_lets_other_tasks_run_at_least_every_few_messages() -> None:
    handled: list[int] = []
    between: list[int] = []
    """Messages the self-mailer handled between two turns of another task."""
    async with open_actor_system() as system:
        system.spawn(addr("loop"), lambda c: SelfMailer(c, handled))
        system.tell_nowait(addr("loop"), Note(text="start"))
        for _ in range(20):
            before = len(handled)
            await trio.lowlevel.checkpoint()
            between.append(len(handled) - before)

    assert sum(between) > 0
    # Either task may run first in a turn, so one turn may see two bursts.
    assert max(between) <= 2 * UNYIELDED_RECEIVES
