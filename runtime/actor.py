"""Actors: one message at a time from a mailbox that outlives the incarnation.

Subclass :class:`Actor` and implement :meth:`Actor.handle`. Long work (an LLM call) does not
belong in ``handle``: start it with :meth:`ActorContext.start_soon` and have it send its
result back as a message, so the actor keeps answering while the work runs. Background tasks
live in the incarnation's nursery and are cancelled when the incarnation ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from runtime.events import DeadLetterCause, Event
from runtime.mailbox import Mailbox
from runtime.messages import Address, Envelope, Message
from runtime.supervision import StopSignal

if TYPE_CHECKING:
    from runtime.system import ActorSystem

__all__ = ["Actor", "ActorContext", "ActorFactory"]


class ActorContext:
    """What an actor incarnation may do: send, ask, reply, run background work, stop."""

    def __init__(
        self,
        system: ActorSystem,
        address: Address,
        incarnation: int,
        nursery: trio.Nursery,
        stop: StopSignal,
    ) -> None:
        self.system = system
        self.address = address
        self.incarnation = incarnation
        self._nursery = nursery
        self._stop = stop

    async def tell(self, to: Address, payload: Message) -> None:
        await self.system.tell(to, payload, sender=self.address)

    def tell_nowait(self, to: Address, payload: Message) -> None:
        self.system.tell_nowait(to, payload, sender=self.address)

    async def ask(self, to: Address, payload: Message, *, timeout: float | None = None) -> Any:
        return await self.system.ask(to, payload, sender=self.address, timeout=timeout)

    def reply(self, request: Envelope, payload: Message) -> None:
        self.system.reply(request, payload, sender=self.address)

    def record(self, event: Event) -> None:
        self.system.record(event)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run background work owned by this incarnation; it is cancelled when the actor ends.

        An exception escaping it crashes the actor, like one escaping ``handle``.
        """
        self._nursery.start_soon(fn, *args)

    def stop(self) -> None:
        """Finish after the current message; a transient actor is then retired."""
        self._stop.request()


class Actor:
    """Base class. ``started`` runs before the first message, ``stopping`` after the last."""

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
) -> None:
    """Run one incarnation until stopped.

    A crash inside ``handle`` dead-letters the message being handled and re-raises, so the
    supervisor restarts the actor and the next incarnation starts with the next message. A
    handler cancelled mid-message dead-letters it too, so an ask waiting on it fails at once.
    A graceful stop wakes the wait for more mail (:meth:`Mailbox.wake`) and never
    interrupts a handler in progress; only a hard cancel (shutdown timeout) does that.
    """
    stop.on_request(mailbox.wake)
    async with trio.open_nursery() as nursery:
        actor = factory(ActorContext(system, mailbox.address, incarnation, nursery, stop))
        await actor.started()
        while not stop.requested:
            try:
                envelope = await mailbox.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                break
            if envelope is None:
                break  # woken by a graceful stop
            try:
                await actor.handle(envelope)
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                system.dead_letter(envelope, DeadLetterCause.CRASHED, reason)
                raise
            except trio.Cancelled:
                # Killed mid-message (shutdown timeout, Ctrl+C): it was never fully handled.
                system.dead_letter(
                    envelope, DeadLetterCause.UNDELIVERABLE, "its handler was cancelled"
                )
                raise
        await actor.stopping()
        nursery.cancel_scope.cancel()
