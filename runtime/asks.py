"""Asks: a request that waits for its reply, monitored by the incarnation that took it.

An ask monitors its callee, as ``gen_server:call`` does: the incarnation that takes a request
out of its mailbox holds it until it replies, and when that incarnation ends (crash, stop,
cancellation) the asks it still holds fail with :class:`CalleeStopped`. Requests still queued
are not failed: the next incarnation reads them. An actor that asks itself from its own
handler would wait for itself forever; that ask fails at once with :class:`SelfAsk`.
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import trio

from conclave.runtime.errors import AskTimeout, CalleeStopped, SelfAsk
from conclave.runtime.eventlog import EventTap
from conclave.runtime.events import DeadLetterCause, Delivered, Event
from conclave.runtime.messages import Address, Envelope, Message

if TYPE_CHECKING:
    from trio.lowlevel import Task

__all__ = ["Asks"]


class _PendingReply:
    """One ask's slot: its reply or error, once settled, and the asking task parked on it.

    A one-waiter event of its own rather than a ``trio.Event``, whose parking lot cost
    more than the rest of the slot (every ask of a run makes one)."""

    __slots__ = ("error", "holder", "settled", "value", "waiter")

    def __init__(self) -> None:
        self.settled = False
        self.waiter: Task | None = None
        self.value: Any = None
        self.error: Exception | None = None
        self.holder: dict[int, Envelope] | None = None
        """The ``taken`` map of the incarnation that took the request, once one has."""

    @trio.lowlevel.enable_ki_protection
    def settle(self) -> None:
        """The reply (or the error) is in: wake the asker. Protected from KeyboardInterrupt,
        as ``trio.Event.set`` is: between forgetting the waiter and rescheduling it, an
        interrupt would leave the asker parked on a slot that says it is settled."""
        self.settled = True
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            trio.lowlevel.reschedule(waiter)

    async def wait(self) -> None:
        """Until :meth:`settle`; a checkpoint either way, like ``trio.Event.wait``."""
        if self.settled:
            await trio.lowlevel.checkpoint()
            return
        self.waiter = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self.waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)


class Asks(abc.ABC):
    """The ask/reply half of :class:`~runtime.system.ActorSystem`: its base class, not an
    object it holds, so an ask or a reply costs no extra call on the way.

    It owns the pending replies; sending, dead-lettering and the taps are the system's.
    """

    _taps: list[EventTap]
    _delivery_taps: list[EventTap]

    def __init__(self) -> None:
        self._now: Callable[[], float] = trio.lowlevel.current_clock().current_time
        """``trio.current_time`` without its two call layers: the run's clock is fixed, and
        a run reads the time for every envelope and every event (128,000 times in a
        2,000-agent run, a tenth of a microsecond saved each)."""
        self._pending: dict[int, _PendingReply] = {}
        self._correlation = itertools.count(1)
        self._replies_delivered = 0
        """Replies handed to a waiting ask (they never pass through a mailbox)."""

    @abc.abstractmethod
    def record(self, event: Event) -> None: ...

    @abc.abstractmethod
    def record_delivery(self, event: Delivered) -> None: ...

    @abc.abstractmethod
    def dead_letter(self, envelope: Envelope, cause: DeadLetterCause, reason: str) -> None: ...

    @abc.abstractmethod
    def send_envelope_nowait(self, envelope: Envelope) -> None: ...

    @abc.abstractmethod
    async def _send(self, envelope: Envelope, *, asking: bool) -> None: ...

    @abc.abstractmethod
    def _envelope(
        self, to: Address, payload: Message, sender: Address | None, cid: int | None = None
    ) -> Envelope: ...

    async def ask(
        self,
        to: Address,
        payload: Message,
        *,
        sender: Address | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for the payload of its reply.

        Raises :class:`AskTimeout` after ``timeout`` seconds, or :class:`Undeliverable` at once
        if the request is dropped or crashes its handler, or :class:`CalleeStopped` (an
        Undeliverable) as soon as the incarnation that took it ends without replying: ask
        again to reach the restarted one. Asking the actor whose ``started``/``handle``/
        ``stopping`` is running in this task raises :class:`SelfAsk`. On cancellation the
        pending slot is removed; a late reply is dead-lettered.
        """
        cid = next(self._correlation)
        slot = _PendingReply()
        self._pending[cid] = slot
        envelope = self._envelope(to, payload, sender, cid)
        try:
            if timeout is None:
                # No cancel scope when there is no deadline: it is a hot path.
                await self._send(envelope, asking=True)
                await slot.wait()
            else:
                # The send is inside the deadline too: waiting for room in a full mailbox counts.
                with trio.move_on_after(timeout):
                    await self._send(envelope, asking=True)
                    await slot.wait()
                if not slot.settled:
                    raise AskTimeout(to, timeout)
        finally:
            del self._pending[cid]
            if slot.holder is not None:
                slot.holder.pop(cid, None)
        if slot.error is not None:
            raise slot.error
        return slot.value

    def _refuse_self_ask(self, envelope: Envelope, address: Address) -> NoReturn:
        """The ask's request reached the mailbox whose reader is the asking task itself."""
        reason = "its own actor asked it from inside its handler"
        self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, reason)
        raise SelfAsk(address)

    def reply(self, request: Envelope, payload: Message, *, sender: Address | None = None) -> None:
        """Answer ``request``: to a waiting ``ask`` directly, else as a tell to its sender.

        An ask takes one reply. A reply to an ask that already has one (or already failed,
        or whose asker stopped waiting) is dead-lettered, never delivered: the first stands.
        """
        cid = request.correlation_id
        if request.sender is None and cid is None:
            return  # a tell from outside any actor: there is nobody to answer
        envelope = Envelope(
            sender=sender,
            recipient=request.sender or _ASKER,
            payload=payload,
            correlation_id=cid,
            timestamp=self._now(),
            is_reply=True,
        )
        if cid is None:
            self.send_envelope_nowait(envelope)
            return
        slot = self._pending.get(cid)
        if slot is None:
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, "the asker stopped waiting")
        elif slot.settled:
            if slot.error is None:
                reason = "the request was already answered; the first reply stands"
            else:
                reason = f"the ask had already failed: {slot.error}"
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, reason)
        else:
            slot.value = payload
            slot.settle()
            self._replies_delivered += 1
            if self._delivery_taps:
                self.record_delivery(Delivered(at=envelope.timestamp, envelope=envelope))

    # ------------------------------------------------------------------ monitoring

    def took_request(self, request: Envelope, taken: dict[int, Envelope]) -> None:
        """An incarnation took ``request`` out of its mailbox: it now answers for it.

        ``taken`` is that incarnation's map of unanswered requests. If another incarnation
        took the same request before (it was forwarded), the newest one answers for it.
        """
        cid = request.correlation_id
        assert cid is not None
        slot = self._pending.get(cid)
        if slot is None:
            return  # nobody waits for it any more
        if slot.holder is not None and slot.holder is not taken:
            slot.holder.pop(cid, None)
        slot.holder = taken
        taken[cid] = request

    def callee_ended(
        self, address: Address, incarnation: int, taken: dict[int, Envelope], ending: str
    ) -> None:
        """The incarnation owning ``taken`` ended: fail the asks it still holds.

        Each request is dead-lettered (cause ``undeliverable``) and its ask raises
        :class:`CalleeStopped`.
        """
        for cid, request in taken.items():
            slot = self._pending.get(cid)
            if slot is None or slot.settled:
                continue
            error = CalleeStopped(address, incarnation, ending)
            # Failed first, so the dead letter's generic Undeliverable does not replace it.
            slot.error = error
            slot.settle()
            self.dead_letter(request, DeadLetterCause.UNDELIVERABLE, error.reason)
        taken.clear()

    def _fail_ask(self, envelope: Envelope, error: Exception) -> None:
        """Fail the ask waiting for ``envelope`` (a request), if one still waits."""
        if envelope.correlation_id is None or envelope.is_reply:
            return
        slot = self._pending.get(envelope.correlation_id)
        if slot is not None and not slot.settled:
            slot.error = error
            slot.settle()


_ASKER = Address("asker")
"""Who a reply to a request sent from outside any actor is addressed to."""
