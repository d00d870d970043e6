"""Bounded mailboxes with an explicit overflow policy.

A mailbox belongs to an address, not to an actor incarnation: it outlives crashes, so the
messages queued behind the one that crashed an actor reach the restarted incarnation.

Sending is all-or-nothing under cancellation, as with trio's channels: a ``send`` that raises
``Cancelled`` enqueued nothing.
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict, deque
from typing import TYPE_CHECKING

import attrs
import trio
from outcome import Error, Value
from trio.lowlevel import enable_ki_protection

from conclave.runtime.errors import MailboxFull
from conclave.runtime.messages import Address, Envelope

if TYPE_CHECKING:
    from trio.lowlevel import Task

__all__ = ["UNYIELDED_RECEIVES", "Mailbox", "MailboxSpec", "MailboxStatistics", "Overflow"]

UNYIELDED_RECEIVES = 16
"""Receives in a row that may take queued mail without letting other tasks run (see
:meth:`Mailbox.receive`)."""


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
    """A bounded queue of envelopes with trio's channel semantics, plus counters. Senders
    are routed here by the system.

    Written on trio's low-level parking rather than as a wrapper around a memory channel,
    whose shared state, clone bookkeeping and extra call layer made trio's channels 3.4 %
    of the CPU of a 2,000-agent run (profiled at 516edca), on top of this class's own
    wrappers. Semantics are the channel's: an envelope goes straight to a waiting receiver,
    else into the buffer if there is room; a blocked sender's envelope moves into the buffer
    as room appears (first blocked, first in), and the sender is woken as if it had sent.

    Every method that moves a parked task or an envelope is KeyboardInterrupt-protected, as
    trio's channels are: an interrupt between taking a task off its queue and rescheduling
    it would leave it parked for good (and its abort, on cancellation, would not find it).
    """

    __slots__ = (
        "_capacity",
        "_closed",
        "_drained",
        "_fail_fast",
        "_peak",
        "_queue",
        "_receivers",
        "_rejected",
        "_senders",
        "_taken",
        "_unyielded",
        "accepted",
        "address",
        "reader",
        "spec",
        "taken",
    )

    def __init__(self, address: Address, spec: MailboxSpec) -> None:
        self.address = address
        self.spec = spec
        self._capacity = spec.capacity
        self._queue: deque[Envelope] = deque()
        self._receivers: OrderedDict[Task, None] = OrderedDict()
        """Tasks parked in :meth:`receive`, first come first served."""
        self._senders: OrderedDict[Task, Envelope] = OrderedDict()
        """Tasks parked in :meth:`send` for room, with the envelope each one sends."""
        self._closed = False
        self._unyielded = 0
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

    @enable_ki_protection
    def send_nowait(self, envelope: Envelope) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if self._receivers:
            task, _ = self._receivers.popitem(last=False)
            self.accepted += 1
            self._taken += 1
            trio.lowlevel.reschedule(task, Value(envelope))
            return
        queue = self._queue
        if len(queue) >= self._capacity:
            if self._fail_fast:
                self._rejected += 1
                raise MailboxFull(self.address, int(self._capacity))
            raise trio.WouldBlock
        queue.append(envelope)
        self._count()

    @enable_ki_protection
    async def send(self, envelope: Envelope) -> None:
        """Enqueue, waiting for room if the policy blocks. If it raises ``Cancelled``, the
        envelope was not enqueued; if it returns, it was."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self.send_nowait(envelope)
        except trio.WouldBlock:
            pass
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        task = trio.lowlevel.current_task()
        senders = self._senders
        senders[task] = envelope

        def abort(_: object) -> trio.lowlevel.Abort:
            del senders[task]
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def _count(self) -> None:
        self.accepted += 1
        queued = self.accepted - self._taken
        if queued > self._peak:
            self._peak = queued

    @enable_ki_protection
    async def receive(self) -> Envelope | None:
        """The next envelope; ``None`` if :meth:`wake` ended the wait for one.

        Always a cancellation point: if it raises ``Cancelled`` it took nothing. A schedule
        point when it waits, and otherwise once every :data:`UNYIELDED_RECEIVES` receives in
        a row: an actor working through a backlog keeps the CPU for a few messages instead
        of handing it over before each one (a fifth of a run's task switches were these
        handovers; 4 % of the CPU of a 2,000-agent ring run), yet never for long, so an
        actor that keeps mailing itself still lets every other task run.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._queue or self._senders:
            queued = self.receive_nowait()
            self._unyielded += 1
            if self._unyielded >= UNYIELDED_RECEIVES:
                self._unyielded = 0
                await trio.lowlevel.cancel_shielded_checkpoint()
            return queued
        if self._closed:
            raise trio.ClosedResourceError
        self._unyielded = 0
        task = trio.lowlevel.current_task()
        receivers = self._receivers
        receivers[task] = None

        def abort(_: object) -> trio.lowlevel.Abort:
            del receivers[task]
            return trio.lowlevel.Abort.SUCCEEDED

        # The sender that wakes us counted the envelope taken; wake() hands over None.
        handed: Envelope | None = await trio.lowlevel.wait_task_rescheduled(abort)
        return handed

    @enable_ki_protection
    def receive_nowait(self) -> Envelope:
        """The next queued envelope, or ``trio.WouldBlock`` if there is none."""
        if self._closed:
            raise trio.ClosedResourceError
        queue = self._queue
        if self._senders:
            # Room appears: the longest-blocked sender's envelope moves in, and it wakes. The
            # head is taken in the same step, so it is counted taken first: the envelope moving
            # in never makes more queued than the capacity (the peak would say it did).
            task, waiting = self._senders.popitem(last=False)
            queue.append(waiting)
            self._taken += 1
            self._count()
            trio.lowlevel.reschedule(task)
            return queue.popleft()
        if not queue:
            raise trio.WouldBlock
        self._taken += 1
        return queue.popleft()

    @enable_ki_protection
    def wake(self) -> None:
        """End the wait of a receiver blocked on this (necessarily empty) mailbox.

        A graceful stop uses this, not a cancel scope around every idle wait: opening one
        per message cost more than the rest of a delivery. A waiting receiver means the
        buffer is empty, so ``None`` goes straight to it: it never queues behind mail or
        takes a slot. With nobody waiting this does nothing.
        """
        if self._receivers:
            task, _ = self._receivers.popitem(last=False)
            trio.lowlevel.reschedule(task, Value(None))

    def empty(self) -> bool:
        return not self._queue

    @enable_ki_protection
    def drain(self) -> list[Envelope]:
        """Take everything queued, without waiting (used when an address is retired)."""
        out: list[Envelope] = []
        while True:
            try:
                out.append(self.receive_nowait())
            except (trio.WouldBlock, trio.ClosedResourceError):
                return out

    @enable_ki_protection
    def close(self) -> None:
        """No more sending or receiving: a receiver still waiting (an incarnation that was
        abandoned) gets ``ClosedResourceError``, as a blocked sender would (:meth:`retire`
        drains those first)."""
        self._closed = True
        parked = [*self._receivers, *self._senders]
        self._receivers.clear()
        self._senders.clear()
        for task in parked:
            trio.lowlevel.reschedule(task, Error(trio.ClosedResourceError()))

    @enable_ki_protection
    def retire(self) -> list[Envelope]:
        """Take everything queued and close: the address is gone for good.

        Draining also takes the envelopes of senders blocked for room (each moves in as
        room appears, and its sender wakes as if it had been sent); they are remembered so
        such a sender can learn that its envelope was never read (:meth:`was_drained`).
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
        return MailboxStatistics(
            address=self.address,
            capacity=self.spec.capacity,
            overflow=self.spec.overflow,
            queued=len(self._queue),
            peak_queued=self._peak,
            accepted=self.accepted,
            rejected=self._rejected,
            blocked_senders=len(self._senders),
            waiting_receivers=len(self._receivers),
        )
