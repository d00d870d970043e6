"""The router: routing rules, facts, fact observers, held mail, release and redirect.

Routing happens inline in the sender's task (no router task, no extra hop): the rules run and
the router says which mailbox takes the envelope; the actor system enqueues it and tells the
router it was delivered, so observers can turn it into facts. A rule that raises surfaces to
the sender as :class:`RoutingRuleError`; the router has no task to kill.

Held envelopes wait in the router until their :class:`Hold` condition holds on the facts, or
until the rule that holds them is removed; then they are routed again. An envelope that
nothing will ever read is dead-lettered through the system: nothing vanishes silently.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs
import trio

from conclave.runtime.errors import RedirectLoop, RoutingRuleError, SystemClosed
from conclave.runtime.eventlog import EventTap
from conclave.runtime.events import DeadLetterCause, Delivered, Event, Held, Redirected, Released
from conclave.runtime.mailbox import Mailbox
from conclave.runtime.messages import Address, Envelope
from conclave.runtime.routing import (
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

__all__ = ["Router"]

_MAX_REDIRECTS = 8


@attrs.define
class _HeldEnvelope:
    envelope: Envelope
    hold: Hold
    rule: object
    """The rule that holds it: removing that rule releases it."""


class Router:
    """Decides each envelope's fate for one actor system, and keeps the mail it holds.

    The system owns the mailboxes, the taps and dead-lettering. The router reads the system's
    mailbox map itself (so a registered mailbox is seen at once) and its lists of taps (all of
    them, and those that hear plain deliveries), to skip building events nobody hears; the
    system hands it new lists when a tap is removed or a tap's hearing changes.
    It calls back for recording and dead-lettering.
    """

    def __init__(
        self,
        system_name: str,
        *,
        mailboxes: Mapping[Address, Mailbox],
        taps: Sequence[EventTap],
        delivery_taps: Sequence[EventTap],
        now: Callable[[], float],
        record: Callable[[Event], None],
        record_delivery: Callable[[Delivered], None],
        dead_letter: Callable[[Envelope, DeadLetterCause, str], None],
        fail_ask: Callable[[Envelope, Exception], None],
    ) -> None:
        self._system_name = system_name
        self._mailboxes = mailboxes
        self.taps = taps
        self.delivery_taps = delivery_taps
        """The taps that hear plain deliveries (:func:`~runtime.eventlog.hears_deliveries`)."""
        self._now = now
        """The run clock's ``current_time`` (see :class:`~runtime.asks.Asks`)."""
        self._record = record
        self._record_delivery = record_delivery
        self._dead_letter = dead_letter
        self._fail_ask = fail_ask
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
        self._decider: object = None
        """The rule behind the last decision other than Deliver (see :meth:`_decide`)."""
        self.nursery: trio.Nursery | None = None
        """Where a released envelope waits for room in a full mailbox; set while the system runs."""
        self.closed = False
        """Once true, routing raises :class:`SystemClosed` and nothing held is released."""
        self.routed = 0
        self.delivered = 0
        self.released = 0
        self.redirected = 0

    # ------------------------------------------------------------------ rules & facts

    def add_rule(self, rule: RoutingRule, *, at: Address | None = None) -> None:
        if at is None:
            self._global_rules.append(rule)
        else:
            self._address_rules.setdefault(at, []).append(rule)
        self._global_rules_by_payload.clear()
        self._recheck_held()

    def remove_rule(self, rule: RoutingRule) -> None:
        removed: list[object] = []
        for rules in (self._global_rules, *self._address_rules.values()):
            if rule in rules:
                removed.append(rules.pop(rules.index(rule)))
        self._global_rules_by_payload.clear()
        if removed and self._held and not self.closed:
            self._release_ready(
                [i for i, item in self._held.items() if any(item.rule is r for r in removed)]
            )
        self._recheck_held()

    def add_observer(self, observer: FactObserver) -> None:
        self._observers.append(observer)
        self._observers_by_payload.clear()

    def update_facts(self, changes: Mapping[str, Any]) -> None:
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

    @property
    def held_now(self) -> int:
        return len(self._held)

    # ------------------------------------------------------------------ routing

    def route(
        self, envelope: Envelope, decided: Deliver | Drop | Redirect | None = None
    ) -> tuple[Envelope, Mailbox] | None:
        """Apply rules; return where to enqueue, or ``None`` if held or dead-lettered.
        ``decided``: the rules' decision on ``envelope``, if the caller has just taken it (a
        release), so that they are not asked twice."""
        if self.closed:
            raise SystemClosed(f"actor system {self._system_name} is shut down")
        self.routed += 1
        decision = decided if decided is not None else self._decide(envelope)
        if type(decision) is Deliver:
            box = self._mailboxes.get(envelope.recipient)
            if box is not None:
                return envelope, box
        return self._route_on(envelope, decision)

    def _route_on(
        self, envelope: Envelope, decided: Deliver | Drop | Hold | Redirect
    ) -> tuple[Envelope, Mailbox] | None:
        """:meth:`route` past its common case (delivered to a registered mailbox), from the
        rules' first decision ``decided``: redirects, drops, holds and unknown addresses."""
        decision: Deliver | Drop | Hold | Redirect | None = decided
        for _ in range(_MAX_REDIRECTS):
            if decision is None:
                decision = self._decide(envelope)
            if type(decision) is Deliver:
                box = self._mailboxes.get(envelope.recipient)
                if box is None:
                    self._dead_letter(
                        envelope, DeadLetterCause.UNDELIVERABLE, f"no actor at {envelope.recipient}"
                    )
                    return None
                return envelope, box
            if isinstance(decision, Redirect):
                self.redirected += 1
                if self.taps:
                    self._record(Redirected(at=self._now(), envelope=envelope, to=decision.to))
                envelope = envelope.redirected(decision.to)
                decision = None
                continue
            if isinstance(decision, Drop):
                self._dead_letter(envelope, DeadLetterCause.DROPPED, decision.reason)
                return None
            assert isinstance(decision, Hold)
            self._hold(envelope, decision, self._decider)
            if self.taps:
                self._record(Held(at=self._now(), envelope=envelope, reason=decision.reason))
            return None
        raise RedirectLoop(
            f"envelope for {envelope.recipient} was redirected {_MAX_REDIRECTS} times; "
            "check the Redirect rules for a cycle"
        )

    def _decide(self, envelope: Envelope) -> Deliver | Drop | Hold | Redirect:
        # The table lookup of _rules_for inlined: most envelopes concern no rule, and for
        # them this is the whole decision.
        payload_type = type(envelope.payload)
        rules = self._global_rules_by_payload.get(payload_type)
        if rules is None or self._address_rules:
            rules = self._rules_for(envelope.recipient, payload_type)
        if not rules:
            return _DELIVER
        facts = self.facts
        for rule in rules:
            try:
                decision = rule.decide(envelope, facts)
            except Exception as exc:
                raise RoutingRuleError(rule_name(rule), exc) from exc
            if type(decision) is not Deliver:
                self._decider = rule
                return decision
        return _DELIVER

    def after_delivery(self, envelope: Envelope, *, released: bool = False) -> None:
        """``envelope`` is in its mailbox: count it, tell the taps, update the facts. The
        delivery that ends a hold (``released``) goes to every tap, a plain one only to those
        that hear them."""
        self.delivered += 1
        if released:
            if self.taps:
                self._record(Delivered(at=self._now(), envelope=envelope))
        elif self.delivery_taps:
            self._record_delivery(Delivered(at=self._now(), envelope=envelope))
        if self._observers:
            payload_type = type(envelope.payload)
            observers = self._observers_by_payload.get(payload_type)
            if observers is None:
                observers = self._observers_for(payload_type)
            for observer in observers:
                changes = observer.observe(envelope, self.facts)
                if changes:
                    self.update_facts(changes)

    # ------------------------------------------------------------------ holds

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
        if not self._held or self.closed:
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
            decision = self._decide_released(item.envelope)
            if isinstance(decision, Hold):
                continue
            self.released += 1
            self._record(Released(at=self._now(), envelope=item.envelope))
            self._release(item.envelope, decision)

    def _decide_released(self, envelope: Envelope) -> Deliver | Drop | Hold | Redirect | None:
        """The rules' decision on an envelope leaving its hold; ``None`` if a rule raised
        (:meth:`_release` asks again and reports the error). If another rule holds it now, it
        moves to that hold without recording a release and a new hold: the envelope never
        left the router, and the pair of events was a tenth of a small run's log."""
        try:
            decision = self._decide(envelope)
        except Exception:
            return None
        if isinstance(decision, Hold):
            self._hold(envelope, decision, self._decider)
        return decision

    def _unhold(self, held_id: int) -> _HeldEnvelope:
        item = self._held.pop(held_id)
        if item.hold.watch:
            for key in item.hold.watch:
                self._held_watching[key].discard(held_id)
        else:
            self._held_on_any_change.discard(held_id)
        return item

    def _release(
        self, envelope: Envelope, decided: Deliver | Drop | Redirect | None = None
    ) -> None:
        """Route a released envelope again (``decided``: see :meth:`route`). Nobody is waiting
        on this send to hear a rule fail, so a failure goes to the asker (if any) and the
        envelope itself is dead-lettered."""
        try:
            routed = self.route(envelope, decided)
        except Exception as exc:
            self._fail_ask(envelope, exc)
            self._dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, str(exc))
            return
        if routed is None:
            return
        envelope, box = routed
        try:
            box.send_nowait(envelope)
        except trio.WouldBlock:
            assert self.nursery is not None
            self.nursery.start_soon(self._deliver_later, envelope, box)
            return
        except Exception as exc:
            self._dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, str(exc))
            return
        self.after_delivery(envelope, released=True)

    async def _deliver_later(self, envelope: Envelope, box: Mailbox) -> None:
        """Wait for room for a released envelope; if shutdown cancels the wait, dead-letter it."""
        try:
            await box.send(envelope)
        except trio.Cancelled:
            reason = "system shut down before the mailbox had room"
            self._dead_letter(envelope, DeadLetterCause.UNDELIVERABLE, reason)
            raise
        if not box.was_drained(envelope):  # else its actor retired and dead-lettered it
            self.after_delivery(envelope, released=True)

    def release(self) -> None:
        """The system is shut down for good (:attr:`closed`): drop the callbacks into it.
        They are the system's own bound methods and the system holds this router, so kept
        they would leave the pair (and every rule, fact and tap they reach) in a reference
        cycle for the garbage collector to find."""
        self._record = self._record_delivery = self._dead_letter = self._fail_ask = _system_closed

    def drop_held(self) -> None:
        """Dead-letter everything held (the system is shutting down)."""
        for item in self._held.values():
            reason = "system shut down while held"
            self._dead_letter(item.envelope, DeadLetterCause.UNDELIVERABLE, reason)
        self._held.clear()
        self._held_watching.clear()
        self._held_on_any_change.clear()


def _system_closed(*_: object) -> None:
    """The callbacks of a released router: nothing is routed once the system is closed."""
    raise SystemClosed("the actor system is shut down")


_DELIVER = Deliver()
_MISSING = object()
