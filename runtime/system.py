"""The actor system: names, routes, supervises and shuts down.

Routing happens inline in the sender's task (no router task, no extra hop): the rules run,
the envelope lands in the recipient's mailbox, and the event taps hear about it. A rule that
raises surfaces to the sender as :class:`RoutingRuleError`; the router has no task to kill.
A tap that raises is removed and recorded (:class:`TapFailed`); the sender never sees it.

An ask monitors its callee, as ``gen_server:call`` does: the incarnation that takes a request
out of its mailbox holds it until it replies, and when that incarnation ends (crash, stop,
cancellation) the asks it still holds fail with :class:`CalleeStopped`. Requests still queued
are not failed: the next incarnation reads them.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Any

import attrs
import trio

from runtime.actor import ActorFactory, run_incarnation
from runtime.errors import (
    AskTimeout,
    CalleeStopped,
    RedirectLoop,
    RoutingRuleError,
    SelfAsk,
    SystemClosed,
    Undeliverable,
)
from runtime.eventlog import EventTap, JsonlEventLog
from runtime.events import (
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Event,
    Held,
    LogOpened,
    Redirected,
    Released,
    TapFailed,
)
from runtime.mailbox import Mailbox, MailboxSpec, MailboxStatistics
from runtime.messages import Address, Envelope, Message
from runtime.routing import (
    Deliver,
    Drop,
    FactObserver,
    Facts,
    Hold,
    Redirect,
    RoutingRule,
    inspects,
    rule_name,
)
from runtime.supervision import ChildSpec, Restart, StopSignal, Supervisor, SupervisorSpec

__all__ = ["ActorSystem", "SystemStatistics", "open_actor_system"]

_MAX_REDIRECTS = 8


@attrs.frozen(kw_only=True)
class SystemStatistics:
    routed: int
    delivered: int
    held_now: int
    released: int
    redirected: int
    dead_letters: int
    actors: int
    restarts: int
    """Restarts made by every supervisor in the tree, nested ones included."""


class _PendingReply:
    __slots__ = ("error", "event", "holder", "value")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.value: Any = None
        self.error: Exception | None = None
        self.holder: dict[int, Envelope] | None = None
        """The ``taken`` map of the incarnation that took the request, once one has."""


@attrs.define
class _HeldEnvelope:
    envelope: Envelope
    hold: Hold
    rule: object
    """The rule that holds it: removing that rule releases it."""


class ActorSystem:
    """Use through :func:`open_actor_system`."""

    def __init__(self, name: str, root: SupervisorSpec, taps: Iterable[EventTap]) -> None:
        self.name = name
        self._taps: list[EventTap] = list(taps)
        self.root = Supervisor(name, root, record=self.record)
        self._supervisors: list[Supervisor] = [self.root]
        self._mailboxes: dict[Address, Mailbox] = {}
        self._global_rules: list[RoutingRule] = []
        self._address_rules: dict[Address, list[RoutingRule]] = {}
        self._global_rules_by_payload: dict[type, tuple[RoutingRule, ...]] = {}
        self._observers: list[FactObserver] = []
        self._observers_by_payload: dict[type, tuple[FactObserver, ...]] = {}
        self._facts: dict[str, Any] = {}
        self.facts: Facts = MappingProxyType(self._facts)
        self._held: dict[int, _HeldEnvelope] = {}
        self._held_ids = itertools.count()
        self._held_watching: dict[str, set[int]] = {}
        self._held_on_any_change: set[int] = set()
        self._pending: dict[int, _PendingReply] = {}
        self._correlation = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._routed = 0
        self._delivered = 0
        self._released = 0
        self._redirected = 0
        self._dead_letters = 0
        self._decider: object = None
        """The rule behind the last decision other than Deliver (see :meth:`_decide`)."""

    # ------------------------------------------------------------------ actors

    def spawn(
        self,
        address: Address,
        factory: ActorFactory,
        *,
        restart: Restart = Restart.PERMANENT,
        shutdown: float = 5.0,
        kill_timeout: float = 5.0,
        mailbox: MailboxSpec | None = None,
        supervisor: Supervisor | None = None,
    ) -> None:
        """Register a mailbox at ``address`` and start the actor under ``supervisor`` (root).

        ``shutdown`` bounds a graceful stop; then the incarnation is cancelled and gets
        ``kill_timeout`` to unwind (its teardown hooks run within it) before it is abandoned.
        """
        (supervisor or self.root).start_child(
            self.actor_child(
                address,
                factory,
                restart=restart,
                shutdown=shutdown,
                kill_timeout=kill_timeout,
                mailbox=mailbox,
            )
        )

    def actor_child(
        self,
        address: Address,
        factory: ActorFactory,
        *,
        restart: Restart = Restart.PERMANENT,
        shutdown: float = 5.0,
        kill_timeout: float = 5.0,
        mailbox: MailboxSpec | None = None,
    ) -> ChildSpec:
        """A child spec for an actor; its mailbox exists from now until the child retires."""
        if self._closed:
            raise SystemClosed(f"actor system {self.name} is shut down; cannot spawn {address}")
        if address in self._mailboxes:
            raise ValueError(f"an actor is already registered at {address}")
        box = Mailbox(address, mailbox or MailboxSpec())
        self._mailboxes[address] = box

        async def run(stop: StopSignal, incarnation: int) -> None:
            await run_incarnation(
                self, box, factory, stop, incarnation, teardown_timeout=kill_timeout
            )

        return ChildSpec(
            id=str(address),
            run=run,
            restart=restart,
            shutdown=shutdown,
            kill_timeout=kill_timeout,
            retire=lambda: self._retire(address),
        )

    def supervisor_child(
        self, name: str, spec: SupervisorSpec, *, restart: Restart = Restart.PERMANENT
    ) -> tuple[Supervisor, ChildSpec]:
        """A nested supervisor; start it with ``parent.start_child(child_spec)``.

        When it leaves its parent for good (terminated, or a temporary one exits), its whole
        subtree is retired with it, so its actors' addresses can be spawned again.
        """
        sup = Supervisor(name, spec, record=self.record)
        self._supervisors.append(sup)

        async def run(stop: StopSignal, incarnation: int) -> None:
            await sup.run(stop, incarnation)

        return sup, ChildSpec(
            id=name, run=run, restart=restart, shutdown=math.inf, retire=sup.retire_children
        )

    def _retire(self, address: Address) -> None:
        box = self._mailboxes.pop(address, None)
        if box is None:
            return
        for envelope in box.retire():
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, f"{address} has stopped")

    def is_registered(self, address: Address) -> bool:
        return address in self._mailboxes

    def pending_requests(self, address: Address) -> int:
        """Asks the current incarnation at ``address`` took and has not answered yet."""
        return len(self._mailboxes[address].taken)

    def mailbox_statistics(self, address: Address) -> MailboxStatistics:
        return self._mailboxes[address].statistics()

    # ------------------------------------------------------------------ rules & facts

    def add_rule(self, rule: RoutingRule, *, at: Address | None = None) -> None:
        """Attach a rule system-wide (``at=None``) or to one mailbox. Held mail is re-checked."""
        if at is None:
            self._global_rules.append(rule)
        else:
            self._address_rules.setdefault(at, []).append(rule)
        self._global_rules_by_payload.clear()
        self._recheck_held()

    def remove_rule(self, rule: RoutingRule) -> None:
        """Detach ``rule`` (compared by ``==``) wherever it is attached.

        Envelopes it was holding are routed again at once: released, or held by another rule.
        """
        removed: list[object] = []
        for rules in (self._global_rules, *self._address_rules.values()):
            if rule in rules:
                removed.append(rules.pop(rules.index(rule)))
        self._global_rules_by_payload.clear()
        if removed and self._held and not self._closed:
            self._release_ready(
                [i for i, item in self._held.items() if any(item.rule is r for r in removed)]
            )
        self._recheck_held()

    def add_observer(self, observer: FactObserver) -> None:
        self._observers.append(observer)
        self._observers_by_payload.clear()

    def update_facts(self, changes: Mapping[str, Any]) -> None:
        """Change facts and release held envelopes whose condition now holds."""
        changed = [key for key, value in changes.items() if self._facts.get(key, _MISSING) != value]
        if changed:
            self._facts.update({key: changes[key] for key in changed})
            self._recheck_held(changed)

    def _rules_for(self, address: Address, payload_type: type) -> tuple[RoutingRule, ...]:
        """The rules to consult, in order: system-wide ones, then the mailbox's own; only
        those that inspect this payload class. Indexed by class, not by address, so ten
        thousand mailboxes share one small table."""
        rules = self._global_rules_by_payload.get(payload_type)
        if rules is None:
            rules = tuple(r for r in self._global_rules if inspects(r, payload_type))
            self._global_rules_by_payload[payload_type] = rules
        own = self._address_rules.get(address) if self._address_rules else None
        if own:
            rules = (*rules, *(r for r in own if inspects(r, payload_type)))
        return rules

    def _observers_for(self, payload_type: type) -> tuple[FactObserver, ...]:
        observers = self._observers_by_payload.get(payload_type)
        if observers is None:
            observers = tuple(o for o in self._observers if inspects(o, payload_type))
            self._observers_by_payload[payload_type] = observers
        return observers

    def held(self) -> list[Envelope]:
        return [h.envelope for h in self._held.values()]

    # ------------------------------------------------------------------ sending

    def _envelope(
        self, to: Address, payload: Message, sender: Address | None, cid: int | None = None
    ) -> Envelope:
        return Envelope(
            sender=sender,
            recipient=to,
            payload=payload,
            correlation_id=cid,
            timestamp=trio.current_time(),
        )

    async def tell(self, to: Address, payload: Message, *, sender: Address | None = None) -> None:
        """Route and enqueue; waits for room if the mailbox blocks when full.

        All-or-nothing under cancellation, like a trio channel's ``send``: if it raises
        ``Cancelled``, the message was not routed (no rule saw it, nothing was held or
        dead-lettered) and will never be handled. If it returns, the message was delivered,
        held or dead-lettered, and the event log says which. Raises :class:`Undeliverable`
        if it waited for room and the actor retired meanwhile (its mail was dead-lettered).
        """
        await self._send(self._envelope(to, payload, sender), asking=False)

    def tell_nowait(self, to: Address, payload: Message, *, sender: Address | None = None) -> None:
        """Route and enqueue now; a full mailbox raises ``trio.WouldBlock`` or ``MailboxFull``."""
        self.send_envelope_nowait(self._envelope(to, payload, sender))

    async def send_envelope(self, envelope: Envelope) -> None:
        """Route ``envelope`` and enqueue it; see :meth:`tell` for what cancellation does.

        An actor may send a request it took to itself (to handle it later): only an ask
        waits for the reply, so only :meth:`ask` refuses to ask oneself.
        """
        await self._send(envelope, asking=False)

    async def _send(self, envelope: Envelope, *, asking: bool) -> None:
        """The cancellation check comes before routing, so a cancelled send leaves no trace;
        after routing the only wait is a blocking mailbox's wait for room, which enqueues
        atomically or not at all."""
        await trio.lowlevel.checkpoint_if_cancelled()
        routed = self._route(envelope)
        if routed is None:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        envelope, box = routed
        if asking and box.reader is trio.lowlevel.current_task():
            reason = "its own actor asked it from inside its handler"
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, reason)
            raise SelfAsk(box.address)
        try:
            box.send_nowait(envelope)
        except trio.WouldBlock:
            await box.send(envelope)
            if box.was_drained(envelope):
                # Its actor retired while we waited and the envelope was dead-lettered.
                raise Undeliverable(envelope.recipient, f"{box.address} has stopped") from None
            self._after_delivery(envelope)
            return
        self._after_delivery(envelope)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def send_envelope_nowait(self, envelope: Envelope) -> None:
        routed = self._route(envelope)
        if routed is None:
            return
        envelope, box = routed
        box.send_nowait(envelope)
        self._after_delivery(envelope)

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
                await slot.event.wait()
            else:
                # The send is inside the deadline too: waiting for room in a full mailbox counts.
                with trio.move_on_after(timeout):
                    await self._send(envelope, asking=True)
                    await slot.event.wait()
                if not slot.event.is_set():
                    raise AskTimeout(to, timeout)
        finally:
            del self._pending[cid]
            if slot.holder is not None:
                slot.holder.pop(cid, None)
        if slot.error is not None:
            raise slot.error
        return slot.value

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
            recipient=request.sender or Address("asker"),
            payload=payload,
            correlation_id=cid,
            timestamp=trio.current_time(),
            is_reply=True,
        )
        if cid is None:
            self.send_envelope_nowait(envelope)
            return
        slot = self._pending.get(cid)
        if slot is None:
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, "the asker stopped waiting")
        elif slot.event.is_set():
            if slot.error is None:
                reason = "the request was already answered; the first reply stands"
            else:
                reason = f"the ask had already failed: {slot.error}"
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, reason)
        else:
            slot.value = payload
            slot.event.set()
            self._delivered += 1
            if self._taps:
                self.record(Delivered(at=trio.current_time(), envelope=envelope))

    # ------------------------------------------------------------------ monitoring asks

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
            if slot is None or slot.event.is_set():
                continue
            error = CalleeStopped(address, incarnation, ending)
            self._dead_letters += 1
            self.record(
                DeadLetter(
                    at=trio.current_time(),
                    envelope=request,
                    cause=DeadLetterCause.UNDELIVERABLE,
                    reason=error.reason,
                )
            )
            slot.error = error
            slot.event.set()
        taken.clear()

    # ------------------------------------------------------------------ routing

    def _route(self, envelope: Envelope) -> tuple[Envelope, Mailbox] | None:
        """Apply rules; return where to enqueue, or ``None`` if held or dead-lettered."""
        if self._closed:
            raise SystemClosed(f"actor system {self.name} is shut down")
        self._routed += 1
        for _ in range(_MAX_REDIRECTS):
            decision = self._decide(envelope)
            if type(decision) is Deliver:
                box = self._mailboxes.get(envelope.recipient)
                if box is None:
                    self.dead_letter(
                        envelope, DeadLetterCause.UNDELIVERABLE, f"no actor at {envelope.recipient}"
                    )
                    return None
                return envelope, box
            if isinstance(decision, Redirect):
                self._redirected += 1
                if self._taps:
                    self.record(
                        Redirected(at=trio.current_time(), envelope=envelope, to=decision.to)
                    )
                envelope = envelope.redirected(decision.to)
                continue
            if isinstance(decision, Drop):
                self.dead_letter(envelope, DeadLetterCause.DROPPED, decision.reason)
                return None
            assert isinstance(decision, Hold)
            self._hold(envelope, decision, self._decider)
            if self._taps:
                self.record(Held(at=trio.current_time(), envelope=envelope, reason=decision.reason))
            return None
        raise RedirectLoop(
            f"envelope for {envelope.recipient} was redirected {_MAX_REDIRECTS} times; "
            "check the Redirect rules for a cycle"
        )

    def _decide(self, envelope: Envelope) -> Deliver | Drop | Hold | Redirect:
        facts = self.facts
        for rule in self._rules_for(envelope.recipient, type(envelope.payload)):
            try:
                decision = rule.decide(envelope, facts)
            except Exception as exc:
                raise RoutingRuleError(rule_name(rule), exc) from exc
            if type(decision) is not Deliver:
                self._decider = rule
                return decision
        return _DELIVER

    def _after_delivery(self, envelope: Envelope) -> None:
        self._delivered += 1
        if self._taps:
            self.record(Delivered(at=trio.current_time(), envelope=envelope))
        if self._observers:
            for observer in self._observers_for(type(envelope.payload)):
                changes = observer.observe(envelope, self.facts)
                if changes:
                    self.update_facts(changes)

    def _hold(self, envelope: Envelope, hold: Hold, rule: object) -> None:
        held_id = next(self._held_ids)
        self._held[held_id] = _HeldEnvelope(envelope, hold, rule)
        if hold.watch:
            for key in hold.watch:
                self._held_watching.setdefault(key, set()).add(held_id)
        else:
            self._held_on_any_change.add(held_id)

    def _recheck_held(self, changed: Iterable[str] | None = None) -> None:
        """Release held envelopes whose condition holds; only those watching ``changed``
        facts (or any fact) are examined, in the order they were held."""
        if not self._held or self._closed:
            return
        if changed is None:
            candidates: Iterable[int] = list(self._held)
        else:
            ids = set(self._held_on_any_change)
            for key in changed:
                ids.update(self._held_watching.get(key, ()))
            candidates = sorted(ids)
        facts = self.facts
        self._release_ready([i for i in candidates if self._held[i].hold.until(facts)])

    def _release_ready(self, ready: list[int]) -> None:
        """Take the held envelopes ``ready`` out of their holds and route them again."""
        if not ready:
            return
        released = [self._unhold(i) for i in ready]
        for item in released:
            if self._held_again(item):
                continue
            self._released += 1
            self.record(Released(at=trio.current_time(), envelope=item.envelope))
            self._release(item.envelope)

    def _held_again(self, item: _HeldEnvelope) -> bool:
        """If another rule holds the envelope now, move it to that hold without recording a
        release and a new hold: the envelope never left the router, and the pair of events
        was a tenth of a small run's log."""
        try:
            decision = self._decide(item.envelope)
        except Exception:
            return False  # _release reports the rule's error
        if not isinstance(decision, Hold):
            return False
        self._hold(item.envelope, decision, self._decider)
        return True

    def _unhold(self, held_id: int) -> _HeldEnvelope:
        item = self._held.pop(held_id)
        if item.hold.watch:
            for key in item.hold.watch:
                self._held_watching[key].discard(held_id)
        else:
            self._held_on_any_change.discard(held_id)
        return item

    def _release(self, envelope: Envelope) -> None:
        """Route a released envelope again. Nobody is waiting on this send to hear a rule fail,
        so a failure goes to the asker (if any) and the envelope itself is dead-lettered."""
        try:
            routed = self._route(envelope)
        except Exception as exc:
            self._fail_ask(envelope, exc)
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, str(exc))
            return
        if routed is None:
            return
        envelope, box = routed
        try:
            box.send_nowait(envelope)
        except trio.WouldBlock:
            assert self._nursery is not None
            self._nursery.start_soon(self._deliver_later, envelope, box)
            return
        except Exception as exc:
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, str(exc))
            return
        self._after_delivery(envelope)

    async def _deliver_later(self, envelope: Envelope, box: Mailbox) -> None:
        """Wait for room for a released envelope; if shutdown cancels the wait, dead-letter it."""
        try:
            await box.send(envelope)
        except trio.Cancelled:
            reason = "system shut down before the mailbox had room"
            self.dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, reason)
            raise
        if not box.was_drained(envelope):  # else its actor retired and dead-lettered it
            self._after_delivery(envelope)

    # ------------------------------------------------------------------ events

    def record(self, event: Event) -> None:
        """Hand ``event`` to every tap, inline. A tap that raises is removed, and the others
        hear :class:`TapFailed`; the caller (often a sending actor) never sees the error."""
        failed: list[tuple[EventTap, Exception]] | None = None
        for tap in self._taps:
            try:
                tap.record(event)
            except Exception as exc:
                if failed is None:
                    failed = []
                failed.append((tap, exc))
        if failed is not None:
            self._remove_taps(failed)

    def _remove_taps(self, failed: list[tuple[EventTap, Exception]]) -> None:
        gone = [tap for tap, _ in failed]
        self._taps = [tap for tap in self._taps if not any(tap is g for g in gone)]
        for tap, exc in failed:
            self.record(
                TapFailed(
                    at=trio.current_time(), tap=_tap_name(tap), error=f"{type(exc).__name__}: {exc}"
                )
            )

    def dead_letter(self, envelope: Envelope, cause: DeadLetterCause, reason: str) -> None:
        self._dead_letters += 1
        self.record(
            DeadLetter(at=trio.current_time(), envelope=envelope, cause=cause, reason=reason)
        )
        self._fail_ask(envelope, Undeliverable(envelope.recipient, f"{cause.value}: {reason}"))

    def _fail_ask(self, envelope: Envelope, error: Exception) -> None:
        if envelope.correlation_id is None or envelope.is_reply:
            return
        slot = self._pending.get(envelope.correlation_id)
        if slot is not None and not slot.event.is_set():
            slot.error = error
            slot.event.set()

    def statistics(self) -> SystemStatistics:
        return SystemStatistics(
            routed=self._routed,
            delivered=self._delivered,
            held_now=len(self._held),
            released=self._released,
            redirected=self._redirected,
            dead_letters=self._dead_letters,
            actors=len(self._mailboxes),
            restarts=sum(s.restart_count for s in self._supervisors),
        )

    def _close(self) -> None:
        """Dead-letter whatever is still queued or held: nothing vanishes silently."""
        for item in self._held.values():
            reason = "system shut down while held"
            self.dead_letter(item.envelope, DeadLetterCause.UNDELIVERABLE, reason)
        self._held.clear()
        self._held_watching.clear()
        self._held_on_any_change.clear()
        for address in list(self._mailboxes):
            self._retire(address)
        self._closed = True


_DELIVER = Deliver()
_MISSING = object()


def _tap_name(tap: EventTap) -> str:
    name = getattr(tap, "name", None)
    return name if isinstance(name, str) else type(tap).__name__


@asynccontextmanager
async def open_actor_system(
    *,
    name: str = "system",
    supervisor: SupervisorSpec | None = None,
    event_log: str | os.PathLike[str] | None = None,
    taps: Iterable[EventTap] = (),
) -> AsyncIterator[ActorSystem]:
    """Run an actor system for the duration of the block.

    Leaving the block stops every actor gracefully in reverse start order (each within its
    shutdown timeout, then cancelled). Cancellation (Ctrl+C) cancels everything at once;
    either way no task outlives the block, leftover mail is dead-lettered and the event log
    is closed. A task stuck in a worker thread that ignores cancellation is abandoned by its
    supervisor after its kill timeout, but trio cannot end it: the block exits only when that
    thread returns. If the root supervisor escalates, the block is cancelled and the reason
    is raised: :class:`RestartIntensityExceeded`, or :class:`StartFailed` for an actor that
    could not start. A lone error is raised as itself, not wrapped in an ExceptionGroup.
    """
    log = JsonlEventLog(event_log) if event_log is not None else None
    system = ActorSystem(name, supervisor or SupervisorSpec(), [*taps, *([log] if log else [])])
    if log is not None:
        system.record(LogOpened(at=trio.current_time(), wall_time=time.time(), pid=os.getpid()))
    root_stop = StopSignal()
    try:
        async with trio.open_nursery() as nursery:
            system._nursery = nursery

            async def supervise_root() -> None:
                await system.root.run(root_stop)
                nursery.cancel_scope.cancel()

            nursery.start_soon(supervise_root)
            try:
                yield system
            finally:
                root_stop.request()
    except BaseExceptionGroup as group:
        lone = _lone_error(group)
        if lone is not None:
            raise lone from None
        raise
    finally:
        system._close()
        if log is not None:
            log.close()


def _lone_error(group: BaseExceptionGroup[Any]) -> BaseException | None:
    """The one real error in a nursery's group (ignoring Cancelled), so callers see it bare."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        elif not isinstance(exc, trio.Cancelled):
            leaves.append(exc)

    walk(group)
    return leaves[0] if len(leaves) == 1 else None
