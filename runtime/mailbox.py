"""Bounded mailboxes with an explicit overflow policy.

A mailbox belongs to an address, not to an actor incarnation: it outlives crashes, so the
messages queued behind the one that crashed an actor reach the restarted incarnation.

Sending is all-or-nothing under cancellation, as with trio's channels: a ``send`` that raises
``Cancelled`` enqueued nothing.
"""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING

import attrs
import trio

from conclave.runtime.errors import MailboxFull
from conclave.runtime.messages import Address, Envelope

if TYPE_CHECKING:
    from trio.lowlevel import Task

__all__ = ["Mailbox", "MailboxSpec", "MailboxStatistics", "Overflow"]


class Overflow(enum.Enum):
    """What a full mailbox does to a sender."""

    BLOCK = "block"
    """``send`` waits for room (back-pressure); ``send_nowait`` raises ``trio.WouldBlock``."""
    FAIL_FAST = "fail_fast"
    """Both ``send`` and ``send_nowait`` raise :class:`MailboxFull` at once."""


@attrs.frozen(kw_only=True)
class MailboxSpec:
    capacity: float = attrs.field(default=1024)
    overflow: Overflow = Overflow.BLOCK

    @capacity.validator
    def _check_capacity(self, _attr: attrs.Attribute[float], value: float) -> None:
        # Written so NaN fails the comparison instead of reaching int(), which would raise an
        # error that does not name the field.
        if value != math.inf and not (value >= 0 and value == int(value)):
            raise ValueError(
                f"mailbox capacity must be a whole number >= 0 or math.inf, got {value!r}"
            )


@attrs.frozen(kw_only=True)
class MailboxStatistics:
    address: Address
    capacity: float
    overflow: Overflow
    queued: int
    peak_queued: int
    """Most envelopes accepted and not yet taken by the actor at any one time."""
    accepted: int
    rejected: int
    blocked_senders: int
    waiting_receivers: int


class Mailbox:
    """A trio memory channel plus counters. Senders are routed here by the system."""

    __slots__ = (
        "_drained",
        "_fail_fast",
        "_peak",
        "_receive",
        "_rejected",
        "_send",
        "_taken",
        "accepted",
        "address",
        "reader",
        "spec",
        "taken",
    )

    def __init__(self, address: Address, spec: MailboxSpec) -> None:
        self.address = address
        self.spec = spec
        # ``None`` is the wake-up token of :meth:`wake`; it never waits in the buffer. The
        # channel is not subscripted: building a typing alias per mailbox costs more than the
        # rest of the constructor, and a run makes one mailbox per agent.
        self._send: trio.MemorySendChannel[Envelope | None]
        self._receive: trio.MemoryReceiveChannel[Envelope | None]
        self._send, self._receive = trio.open_memory_channel(spec.capacity)
        self._fail_fast = spec.overflow is Overflow.FAIL_FAST
        self.accepted = 0
        self._taken = 0
        self._rejected = 0
        self._peak = 0
        self._drained: set[int] | None = None
        self.reader: Task | None = None
        """The task running the current incarnation's ``started``/``handle``/``stopping``:
        a request it sends here could only be read by itself (see :class:`SelfAsk`)."""
        self.taken: dict[int, Envelope] = {}
        """The current incarnation's unanswered requests, by correlation id."""

    def send_nowait(self, envelope: Envelope) -> None:
        try:
            self._send.send_nowait(envelope)
        except trio.WouldBlock:
            if self._fail_fast:
                self._rejected += 1
                raise MailboxFull(self.address, int(self.spec.capacity)) from None
            raise
        self._count()

    async def send(self, envelope: Envelope) -> None:
        """Enqueue, waiting for room if the policy blocks. If it raises ``Cancelled``, the
        envelope was not enqueued; if it returns, it was."""
        if self._fail_fast:
            await trio.lowlevel.checkpoint_if_cancelled()
            self.send_nowait(envelope)
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        await self._send.send(envelope)
        self._count()

    def _count(self) -> None:
        # The peak is kept from our own counters: the channel's statistics() builds a record
        # per call, which cost more than the rest of a send.
        self.accepted += 1
        queued = self.accepted - self._taken
        if queued > self._peak:
            self._peak = queued

    async def receive(self) -> Envelope | None:
        """The next envelope; ``None`` if :meth:`wake` ended the wait for one."""
        envelope = await self._receive.receive()
        if envelope is not None:
            self._taken += 1
        return envelope

    def receive_nowait(self) -> Envelope:
        """The next queued envelope, or ``trio.WouldBlock`` if there is none."""
        envelope = self._receive.receive_nowait()
        assert envelope is not None, "wake() hands its token only to a waiting receiver"
        self._taken += 1
        return envelope

    def wake(self) -> None:
        """End the wait of a receiver blocked on this (necessarily empty) mailbox.

        A graceful stop uses this, not a cancel scope around every idle wait: opening one
        per message cost more than the rest of a delivery. A waiting receiver means the
        buffer is empty, so the token goes straight to it: it never queues behind mail or
        takes a slot. With nobody waiting this does nothing.
        """
        if self._receive.statistics().tasks_waiting_receive:
            self._send.send_nowait(None)

    def empty(self) -> bool:
        return self._receive.statistics().current_buffer_used == 0

    def drain(self) -> list[Envelope]:
        """Take everything queued, without waiting (used when an address is retired)."""
        out: list[Envelope] = []
        while True:
            try:
                out.append(self.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return out

    def close(self) -> None:
        self._send.close()
        self._receive.close()

    def retire(self) -> list[Envelope]:
        """Take everything queued and close: the address is gone for good.

        Draining also takes the envelopes of senders blocked for room (trio hands a blocked
        sender's value over as room appears, and wakes it as if it had been sent); they are
        remembered so such a sender can learn that its envelope was never read
        (:meth:`was_drained`).
        """
        envelopes = self.drain()
        self._drained = {id(envelope) for envelope in envelopes}
        self.close()
        return envelopes

    def was_drained(self, envelope: Envelope) -> bool:
        """Whether :meth:`retire` took ``envelope`` (still referenced by its sender, so its
        ``id`` is its own)."""
        return self._drained is not None and id(envelope) in self._drained

    def statistics(self) -> MailboxStatistics:
        stats = self._send.statistics()
        return MailboxStatistics(
            address=self.address,
            capacity=self.spec.capacity,
            overflow=self.spec.overflow,
            queued=stats.current_buffer_used,
            peak_queued=self._peak,
            accepted=self.accepted,
            rejected=self._rejected,
            blocked_senders=stats.tasks_waiting_send,
            waiting_receivers=stats.tasks_waiting_receive,
        )
