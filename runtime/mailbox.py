"""Bounded mailboxes with an explicit overflow policy.

A mailbox belongs to an address, not to an actor incarnation: it outlives crashes, so the
messages queued behind the one that crashed an actor reach the restarted incarnation.
"""

from __future__ import annotations

import enum
import math

import attrs
import trio

from runtime.errors import MailboxFull
from runtime.messages import Address, Envelope

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
    accepted: int
    rejected: int
    blocked_senders: int
    waiting_receivers: int


class Mailbox:
    """A trio memory channel plus counters. Senders are routed here by the system."""

    __slots__ = ("_peak", "_receive", "_rejected", "_send", "accepted", "address", "spec")

    def __init__(self, address: Address, spec: MailboxSpec) -> None:
        self.address = address
        self.spec = spec
        self._send, self._receive = trio.open_memory_channel[Envelope](spec.capacity)
        self.accepted = 0
        self._rejected = 0
        self._peak = 0

    def send_nowait(self, envelope: Envelope) -> None:
        try:
            self._send.send_nowait(envelope)
        except trio.WouldBlock:
            if self.spec.overflow is Overflow.FAIL_FAST:
                self._rejected += 1
                raise MailboxFull(self.address, int(self.spec.capacity)) from None
            raise
        self._count()

    async def send(self, envelope: Envelope) -> None:
        if self.spec.overflow is Overflow.FAIL_FAST:
            self.send_nowait(envelope)
            await trio.lowlevel.checkpoint()
            return
        await self._send.send(envelope)
        self._count()

    def _count(self) -> None:
        self.accepted += 1
        queued = self._send.statistics().current_buffer_used
        if queued > self._peak:
            self._peak = queued

    async def receive(self) -> Envelope:
        return await self._receive.receive()

    def receive_nowait(self) -> Envelope:
        return self._receive.receive_nowait()

    def empty(self) -> bool:
        return self._receive.statistics().current_buffer_used == 0

    def drain(self) -> list[Envelope]:
        """Take everything queued, without waiting (used when an address is retired)."""
        out: list[Envelope] = []
        while True:
            try:
                out.append(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return out

    def close(self) -> None:
        self._send.close()
        self._receive.close()

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
