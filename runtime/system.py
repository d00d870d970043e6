"""The actor system: names, sends, supervises and shuts down.

:class:`ActorSystem` is the facade actors and runs use. It registers mailboxes by address
(``(kind, key)``), spawns actors under supervisors, sends (the :class:`~runtime.router.Router`
decides each envelope's fate inline in the sender's task), asks and replies (its base class,
:class:`~runtime.asks.Asks`), and hands every event to the taps (a plain delivery only to those
that hear them: :func:`~runtime.eventlog.hears_deliveries`). A tap that raises is removed
and recorded (:class:`TapFailed`); the sender never sees it.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import trio

from conclave.runtime.actor import ActorFactory, run_incarnation
from conclave.runtime.asks import Asks
from conclave.runtime.errors import SystemClosed, Undeliverable
from conclave.runtime.eventlog import EventTap, JsonlEventLog, hears_deliveries
from conclave.runtime.events import (
    EVENT_LOG_FORMAT,
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Event,
    LogOpened,
    TapFailed,
)
from conclave.runtime.mailbox import Mailbox, MailboxSpec, MailboxStatistics
from conclave.runtime.messages import Address, Envelope, Message
from conclave.runtime.router import Router
from conclave.runtime.routing import FactObserver, Facts, RoutingRule
from conclave.runtime.supervision import ChildSpec, Restart, StopSignal, Supervisor, SupervisorSpec

__all__ = ["ActorSystem", "SystemStatistics", "open_actor_system"]


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


class ActorSystem(Asks):
    """Use through :func:`open_actor_system`."""

    def __init__(self, name: str, root: SupervisorSpec, taps: Iterable[EventTap]) -> None:
        super().__init__()
        self.name = name
        self._taps: list[EventTap] = list(taps)
        self._delivery_taps: list[EventTap] = [t for t in self._taps if hears_deliveries(t)]
        self.root = Supervisor(name, root, record=self.record)
        self._supervisors: list[Supervisor] = [self.root]
        self._mailboxes: dict[Address, Mailbox] = {}
        self._router = Router(
            name,
            mailboxes=self._mailboxes,
            taps=self._taps,
            delivery_taps=self._delivery_taps,
            now=self._now,
            record=self.record,
            record_delivery=self.record_delivery,
            dead_letter=self.dead_letter,
            fail_ask=self._fail_ask,
        )
        self.facts: Facts = self._router.facts
        self._dead_letters = 0

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
        if self._router.closed:
            raise SystemClosed(f"actor system {self.name} is shut down; cannot spawn {address}")
        if address in self._mailboxes:
            raise ValueError(f"an actor is already registered at {address}")
        box = Mailbox(address, mailbox or MailboxSpec())
        self._mailboxes[address] = box
        return ChildSpec(
            id=str(address),
            # A partial, not a closure awaiting run_incarnation: every time the actor's task
            # resumes (26 times per agent in a run), each frame on its await chain is resumed.
            run=partial(run_incarnation, self, box, factory, teardown_timeout=kill_timeout),
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
        self._router.add_rule(rule, at=at)

    def remove_rule(self, rule: RoutingRule) -> None:
        """Detach ``rule`` (compared by ``==``) wherever it is attached.

        Envelopes it was holding are routed again at once: released, or held by another rule.
        """
        self._router.remove_rule(rule)

    def add_observer(self, observer: FactObserver) -> None:
        self._router.add_observer(observer)

    def update_facts(self, changes: Mapping[str, Any]) -> None:
        """Change facts and release held envelopes whose condition now holds."""
        self._router.update_facts(changes)

    def held(self) -> list[Envelope]:
        return self._router.held()

    # ------------------------------------------------------------------ sending

    def _envelope(
        self, to: Address, payload: Message, sender: Address | None, cid: int | None = None
    ) -> Envelope:
        return Envelope(
            sender=sender,
            recipient=to,
            payload=payload,
            correlation_id=cid,
            timestamp=self._now(),
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
        atomically or not at all.

        An ask's send does not let other tasks run once it has sent: the wait for the reply
        that follows at once does (every ask of a run yielded twice; an eighth of a run's
        task switches)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        routed = self._router.route(envelope)
        if routed is None:
            if not asking:
                await trio.lowlevel.cancel_shielded_checkpoint()
            return
        envelope, box = routed
        if asking and box.reader is trio.lowlevel.current_task():
            self._refuse_self_ask(envelope, box.address)
        try:
            box.send_nowait(envelope)
        except trio.WouldBlock:
            await box.send(envelope)
            if box.was_drained(envelope):
                # Its actor retired while we waited and the envelope was dead-lettered.
                raise Undeliverable(envelope.recipient, f"{box.address} has stopped") from None
            self._router.after_delivery(envelope)
            return
        self._router.after_delivery(envelope)
        if not asking:
            await trio.lowlevel.cancel_shielded_checkpoint()

    def send_envelope_nowait(self, envelope: Envelope) -> None:
        routed = self._router.route(envelope)
        if routed is None:
            return
        envelope, box = routed
        box.send_nowait(envelope)
        self._router.after_delivery(envelope)

    # ------------------------------------------------------------------ events

    def record(self, event: Event) -> None:
        """Hand ``event`` to every tap, inline. A tap that raises is removed, and the others
        hear :class:`TapFailed`; the caller (often a sending actor) never sees the error."""
        # The loop is written here and in record_delivery, not shared: a helper is one more
        # call for every event of a run (16,000 calls in a 1,000-agent run, 0.7 % of them).
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

    def record_delivery(self, event: Delivered) -> None:
        """:meth:`record` for a plain delivery: only the taps that hear them
        (:func:`~runtime.eventlog.hears_deliveries`) are handed it. Callers build the event
        only if :attr:`_delivery_taps` is not empty."""
        failed: list[tuple[EventTap, Exception]] | None = None
        for tap in self._delivery_taps:
            try:
                tap.record(event)
            except Exception as exc:
                if failed is None:
                    failed = []
                failed.append((tap, exc))
        if failed is not None:
            self._remove_taps(failed)

    def refresh_taps(self) -> None:
        """Ask the taps again whether they hear plain deliveries: one whose answer can change
        (an event hub, as subscribers come and go) calls this when it may have."""
        # A new list, not an edit: a record_delivery() up the stack may be iterating the old one.
        self._delivery_taps = [tap for tap in self._taps if hears_deliveries(tap)]
        self._router.delivery_taps = self._delivery_taps

    def _remove_taps(self, failed: list[tuple[EventTap, Exception]]) -> None:
        gone = [tap for tap, _ in failed]
        # A new list, not an edit: a record() further up the stack may be iterating the old one.
        self._taps = [tap for tap in self._taps if not any(tap is g for g in gone)]
        self._router.taps = self._taps
        self.refresh_taps()
        for tap, exc in failed:
            self.record(
                TapFailed(
                    at=trio.current_time(), tap=_tap_name(tap), error=f"{type(exc).__name__}: {exc}"
                )
            )

    def dead_letter(self, envelope: Envelope, cause: DeadLetterCause, reason: str) -> None:
        self._dead_letters += 1
        self.record(DeadLetter(at=self._now(), envelope=envelope, cause=cause, reason=reason))
        self._fail_ask(envelope, Undeliverable(envelope.recipient, f"{cause.value}: {reason}"))

    def statistics(self) -> SystemStatistics:
        router = self._router
        return SystemStatistics(
            routed=router.routed,
            delivered=router.delivered + self._replies_delivered,
            held_now=router.held_now,
            released=router.released,
            redirected=router.redirected,
            dead_letters=self._dead_letters,
            actors=len(self._mailboxes),
            restarts=sum(s.restart_count for s in self._supervisors),
        )

    def _close(self) -> None:
        """Dead-letter whatever is still queued or held: nothing vanishes silently. Then
        release the supervisors and the router, whose references back to this system would
        otherwise keep the whole run (actors, their state, the taps) in reference cycles."""
        self._router.drop_held()
        for address in list(self._mailboxes):
            self._retire(address)
        self._router.closed = True
        self._router.release()
        for supervisor in self._supervisors:
            supervisor.release()


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
        system.record(
            LogOpened(
                at=trio.current_time(),
                wall_time=time.time(),
                pid=os.getpid(),
                format=EVENT_LOG_FORMAT,
            )
        )
    root_stop = StopSignal()
    try:
        async with trio.open_nursery() as nursery:
            system._router.nursery = nursery

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
