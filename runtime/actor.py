"""Actors: one message at a time from a mailbox that outlives the incarnation.

Subclass :class:`Actor` and implement :meth:`Actor.handle`. Long work (an LLM call) does not
belong in ``handle``: start it with :meth:`ActorContext.start_soon` and have it send its
result back as a message, so the actor keeps answering while the work runs. Background tasks
live in the incarnation's nursery and are cancelled when the incarnation ends.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from conclave.runtime.children import Children, OnChildExit
from conclave.runtime.errors import StartFailed, TeardownTimeout
from conclave.runtime.events import DeadLetterCause, Event
from conclave.runtime.mailbox import Mailbox, MailboxStatistics
from conclave.runtime.messages import Address, Envelope, Message
from conclave.runtime.supervision import StopSignal, SupervisorSpec

if TYPE_CHECKING:
    from conclave.runtime.system import ActorSystem

__all__ = ["Actor", "ActorContext", "ActorFactory"]


class ActorContext:
    """What an actor incarnation may do: send, ask, reply, record events, update the
    routing facts, look at its own mailbox, run background work, open child actors under
    its own supervisor, stop, and register teardown hooks.

    This is the whole of the kernel an actor sees. The system itself stays private: an
    actor that could reach it could spawn, retire, re-route or read any other actor's
    mailbox, which is the run's business, not an actor's."""

    def __init__(
        self,
        system: ActorSystem,
        address: Address,
        incarnation: int,
        nursery: trio.Nursery,
        stop: StopSignal,
    ) -> None:
        self._system = system
        self.address = address
        self.incarnation = incarnation
        self._nursery = nursery
        self._stop = stop
        self._children: Children | None = None
        self._children_bound: float | None = None
        """Set once the incarnation ends: how long its children's stop may take."""
        self._exit_stack: contextlib.AsyncExitStack | None = None

    @property
    def exit_stack(self) -> contextlib.AsyncExitStack:
        """Closed when this incarnation ends, however it ends (see :meth:`on_teardown`).
        Enter containers, subprocesses and other resources the incarnation owns here.

        Made on first use: most incarnations (every agent of a run) own nothing to tear
        down, and then their end skips the shielded, deadlined cancel scope a teardown
        runs in (a stack and a scope per agent, about 8 µs of a 2,000-agent run's 0.7 ms
        per agent)."""
        if self._exit_stack is None:
            self._exit_stack = contextlib.AsyncExitStack()
        return self._exit_stack

    async def tell(self, to: Address, payload: Message) -> None:
        """See :meth:`ActorSystem.tell`: if it raises ``Cancelled``, nothing was sent."""
        await self._system.tell(to, payload, sender=self.address)

    def tell_nowait(self, to: Address, payload: Message) -> None:
        self._system.tell_nowait(to, payload, sender=self.address)

    async def ask(self, to: Address, payload: Message, *, timeout: float | None = None) -> Any:
        """See :meth:`ActorSystem.ask`. Asking your own address from ``started``, ``handle``
        or ``stopping`` raises :class:`~runtime.errors.SelfAsk` (it would deadlock); from
        background work it is fine: your handler answers it."""
        return await self._system.ask(to, payload, sender=self.address, timeout=timeout)

    def reply(self, request: Envelope, payload: Message) -> None:
        self._system.reply(request, payload, sender=self.address)

    def record(self, event: Event) -> None:
        """Pass ``event`` to the system's taps (the event log, the UIs). It works for as
        long as the system runs, also after this incarnation has ended: a resource the
        incarnation handed to run-owned state (a transcript file) may report through it."""
        self._system.record(event)

    def update_facts(self, changes: Mapping[str, Any]) -> None:
        """Change routing facts (see :meth:`ActorSystem.update_facts`): held mail whose
        rule now lets it through is released."""
        self._system.update_facts(changes)

    def mailbox_statistics(self) -> MailboxStatistics:
        """This actor's own mailbox: how much mail is queued, for an actor that coalesces
        a burst before it acts on it."""
        return self._system.mailbox_statistics(self.address)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run background work owned by this incarnation; it is cancelled when the actor ends.

        An exception escaping it crashes the actor, like one escaping ``handle``.
        """
        self._nursery.start_soon(fn, *args)

    def children(
        self, spec: SupervisorSpec | None = None, *, on_exit: OnChildExit | None = None
    ) -> Children:
        """This incarnation's own supervisor, opened on the first call (later calls return
        it; their arguments are ignored): child actors spawned through it are stopped and
        retired when this incarnation ends, however it ends, and each exit of a child on its
        own is reported to ``on_exit`` (see :mod:`runtime.children`). Its restarts escalated
        crash this incarnation. Opened first while this incarnation ends (by work unwinding
        from its cancellation), it is closed already: a spawn raises ``RuntimeError``."""
        if self._children is None:
            self._children = Children(
                self._system,
                f"{self.address}#{self.incarnation}/children",
                spec or SupervisorSpec(),
                self._nursery,
                on_exit,
            )
            if self._children_bound is not None:
                # First opened by work unwinding as the incarnation ends: closed at once, or
                # its shielded supervisor would keep the incarnation from ever ending.
                self._children.close(bound=self._children_bound)
        return self._children

    def _close_children(self, bound: float) -> None:
        self._children_bound = bound
        if self._children is not None:
            self._children.close(bound=bound)

    def on_teardown(self, callback: Callable[..., Awaitable[object]], *args: Any) -> None:
        """Run ``await callback(*args)`` when this incarnation ends: after ``stopping()`` on a
        graceful stop, after a crash, or on cancellation (shutdown timeout, Ctrl+C).

        Hooks run last registered first, after background work has been cancelled, shielded
        from cancellation but bounded by the actor's ``kill_timeout``: a cancelled incarnation
        still removes its container or kills its subprocess. A hook cut short by the bound
        is cancelled; after a graceful stop that is recorded as a crash
        (:class:`~runtime.errors.TeardownTimeout`). A hook that raises crashes the incarnation.
        """
        self.exit_stack.push_async_callback(callback, *args)

    def stop(self) -> None:
        """Finish after the current message; a transient actor is then retired."""
        self._stop.request()


class Actor:
    """Base class. ``started`` runs before the first message, ``stopping`` after the last.

    Lifecycle and failure, per incarnation (OTP in trio clothes):

    * ``started`` re-arms in-flight work from run-owned state. If it (or the factory that
      builds the actor) raises, the incarnation fails to start
      (:class:`~runtime.errors.StartFailed`): it is not restarted, and its supervisor
      escalates (a temporary actor is retired instead).
    * A crash in ``handle`` or background work ends the incarnation: the message being
      handled is dead-lettered (so a poison message cannot crash-loop), mail still queued
      waits for the restarted incarnation.
    * Every ask the incarnation took out of its mailbox and has not answered fails with
      :class:`~runtime.errors.CalleeStopped` when it ends, however it ends: a caller never
      waits for a reply that cannot come. Requests kept across restarts in run-owned state
      have lost their asker by then; answering them later is dead-lettered.
    * Cancellation (shutdown timeout, Ctrl+C) interrupts ``handle`` wherever it awaits; the
      message is dead-lettered, ``stopping`` does not run, teardown hooks do.
    * A send that raises ``Cancelled`` sent nothing; one that returned was delivered (or
      held, or dead-lettered, as the log says).
    """

    def __init__(self, context: ActorContext) -> None:
        self.context = context

    async def started(self) -> None:
        return None

    async def handle(self, envelope: Envelope) -> None:
        raise NotImplementedError

    async def stopping(self) -> None:
        return None


ActorFactory = Callable[[ActorContext], Actor]


async def run_incarnation(
    system: ActorSystem,
    mailbox: Mailbox,
    factory: ActorFactory,
    stop: StopSignal,
    incarnation: int,
    *,
    teardown_timeout: float = 5.0,
) -> None:
    """Run one incarnation until stopped.

    A crash inside ``handle`` dead-letters the message being handled and re-raises, so the
    supervisor restarts the actor and the next incarnation starts with the next message. A
    handler cancelled mid-message dead-letters it too, so an ask waiting on it fails at once.
    A graceful stop wakes the wait for more mail (:meth:`Mailbox.wake`) and never
    interrupts a handler in progress; only a hard cancel (shutdown timeout) does that.

    However it ends, its children (:meth:`ActorContext.children`) are stopped while its
    background work is cancelled (both after ``stopping()`` on a graceful stop), the asks it
    took and did not answer fail (:class:`CalleeStopped`), then its teardown hooks run
    (:meth:`ActorContext.on_teardown`) within ``teardown_timeout``. After a crash or a
    cancellation the children's stop is bounded by ``teardown_timeout`` too; after a
    graceful stop each child has its own shutdown timeout.
    """
    stop.on_request(mailbox.wake)
    task = trio.lowlevel.current_task()
    # Correlation id -> request, for the asks this incarnation took and has not answered;
    # an ask removes its entry when it returns, so this holds only the unanswered ones.
    taken: dict[int, Envelope] = {}
    mailbox.reader = task
    mailbox.taken = taken
    context: ActorContext | None = None
    ending = "was cancelled"
    try:
        async with trio.open_nursery() as nursery:
            context = ActorContext(system, mailbox.address, incarnation, nursery, stop)
            children_bound = teardown_timeout
            try:
                try:
                    actor = factory(context)
                except Exception as exc:
                    raise StartFailed(
                        mailbox.address, incarnation, exc, where="its factory"
                    ) from exc
                try:
                    await actor.started()
                except Exception as exc:
                    raise StartFailed(mailbox.address, incarnation, exc) from exc
                while not stop.requested:
                    try:
                        envelope = await mailbox.receive()
                    except (trio.EndOfChannel, trio.ClosedResourceError):
                        break
                    if envelope is None:
                        break  # woken by a graceful stop
                    if envelope.correlation_id is not None and not envelope.is_reply:
                        system.took_request(envelope, taken)
                    try:
                        await actor.handle(envelope)
                    except Exception as exc:
                        reason = f"{type(exc).__name__}: {exc}"
                        system.dead_letter(envelope, DeadLetterCause.CRASHED, reason)
                        raise
                    except trio.Cancelled:
                        # Killed mid-message (shutdown timeout, Ctrl+C): never fully handled.
                        system.dead_letter(
                            envelope, DeadLetterCause.UNDELIVERABLE, "its handler was cancelled"
                        )
                        raise
                await actor.stopping()
                children_bound = math.inf
                nursery.cancel_scope.cancel()
            finally:
                # The children's supervisor is shielded from the nursery's cancellation: it
                # must be told to stop them, or the nursery would wait for it forever.
                context._close_children(children_bound)
        ending = "stopped"
    except BaseException as exc:
        ending = _ending_of(exc)
        raise
    finally:
        if mailbox.reader is task:
            mailbox.reader = None
        system.callee_ended(mailbox.address, incarnation, taken, ending)
        if context is not None:
            await _teardown(context, teardown_timeout, raise_on_timeout=ending == "stopped")


async def _teardown(context: ActorContext, bound: float, *, raise_on_timeout: bool) -> None:
    """Close the incarnation's exit stack, shielded from cancellation, within ``bound``.

    A timeout is raised only after a clean ending: raised while a crash or a cancellation
    propagates it would replace that, and the log must say how the incarnation really ended.
    """
    stack = context._exit_stack
    if stack is None:
        return
    with trio.move_on_after(bound, shield=True) as scope:
        await stack.aclose()
    if scope.cancelled_caught and raise_on_timeout:
        raise TeardownTimeout(context.address, context.incarnation, bound)


def _ending_of(exc: BaseException) -> str:
    """How an incarnation that raised ``exc`` ended. A function of its own so the crash is
    never a local of :func:`run_incarnation`, whose frame its traceback holds: that cycle
    would keep the incarnation (and the system its frame reaches) for the collector."""
    crash = _crash_in(exc)
    return "was cancelled" if crash is None else f"crashed ({type(crash).__name__}: {crash})"


def _crash_in(exc: BaseException) -> BaseException | None:
    """The first error in ``exc`` that is not a cancellation, or ``None``."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            crash = _crash_in(inner)
            if crash is not None:
                return crash
        return None
    return None if isinstance(exc, trio.Cancelled) else exc
