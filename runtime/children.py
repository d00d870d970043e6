"""An actor's own supervisor, linked to the incarnation that opened it.

An actor that delegates work to child actors (an agent's sub-agents) opens them under its
own supervisor with :meth:`ActorContext.children <runtime.actor.ActorContext.children>`.
The link follows Erlang/OTP's between a process and the supervisor it started:

- The children live as long as the incarnation that opened them. When it ends, however it
  ends (a graceful stop, a crash, a restart by its own supervisor, cancellation), its
  children are stopped in reverse start order, each within its shutdown timeout, and
  retired: their addresses are free, and a restarted parent starts with no children.
- A child that crashes is restarted or retired by its restart type, as under any
  supervisor, and every exit is reported: a :class:`~runtime.events.ChildExited` event in
  the log, and to the owner's ``on_exit`` callback. Too many restarts escalate: the
  children's supervisor fails, and with it the owning incarnation (its own supervisor then
  restarts or reports it). Nothing is lost silently.

The supervisor runs as a task of the incarnation, shielded from the cancellation that ends
the incarnation's other background work, so that it can stop its children in order; a stop
after a crash or a cancellation is bounded by the owner's teardown timeout (then the
children are cancelled and given their kill timeouts).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

import trio

from conclave.runtime.events import ChildExited, Event
from conclave.runtime.mailbox import MailboxSpec
from conclave.runtime.messages import Address
from conclave.runtime.supervision import Restart, StopSignal, Supervisor, SupervisorSpec

if TYPE_CHECKING:
    from conclave.runtime.actor import ActorFactory
    from conclave.runtime.system import ActorSystem

__all__ = ["Children", "OnChildExit"]

OnChildExit = Callable[[ChildExited], None]
"""Hears each exit of a child on its own (crash or normal exit) and what was done about it."""


class Children:
    """The child actors of one incarnation; see the module docstring. Made by
    :meth:`ActorContext.children <runtime.actor.ActorContext.children>`."""

    def __init__(
        self,
        system: ActorSystem,
        name: str,
        spec: SupervisorSpec,
        nursery: trio.Nursery,
        on_exit: OnChildExit | None,
    ) -> None:
        self._system = system
        self._on_exit = on_exit
        self.supervisor = Supervisor(name, spec, record=self._record)
        self._stop = StopSignal()
        self._scope = trio.CancelScope(shield=True)
        self.closed = trio.Event()
        """Set once every child has been stopped and retired."""
        nursery.start_soon(self._supervise)

    @property
    def name(self) -> str:
        return self.supervisor.name

    def spawn(
        self,
        address: Address,
        factory: ActorFactory,
        *,
        restart: Restart = Restart.TRANSIENT,
        shutdown: float = 5.0,
        kill_timeout: float = 5.0,
        mailbox: MailboxSpec | None = None,
    ) -> None:
        """Start a child actor at ``address`` (free: raises ``ValueError`` otherwise).

        Transient by default: a child that finishes its work retires, one that crashes is
        restarted. Raises :class:`~runtime.errors.SystemClosed` once the system shuts down,
        and ``RuntimeError`` once the owning incarnation has ended.
        """
        if self._stop.requested:
            raise RuntimeError(f"{self.name} is closed: its incarnation has ended")
        self.supervisor.start_child(
            self._system.actor_child(
                address,
                factory,
                restart=restart,
                shutdown=shutdown,
                kill_timeout=kill_timeout,
                mailbox=mailbox,
            )
        )

    async def terminate(self, address: Address) -> None:
        """Stop a child gracefully (within its shutdown timeout) and retire it; returns as
        well once the owning incarnation's end has stopped every child (the supervisor
        then answers no more requests)."""
        async with trio.open_nursery() as nursery:

            async def first(wait: Callable[[], Awaitable[object]]) -> None:
                await wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(first, partial(self.supervisor.terminate_child, str(address)))
            nursery.start_soon(first, self.closed.wait)

    def close(self, *, bound: float = math.inf) -> None:
        """Stop every child (the owning incarnation ends); returns at once.

        ``bound`` limits how long the stop may take altogether (after a crash or a
        cancellation: the owner's teardown timeout); past it the children are cancelled.
        """
        self._stop.request()
        self._scope.deadline = min(self._scope.deadline, trio.current_time() + bound)

    async def _supervise(self) -> None:
        try:
            with self._scope:
                await self.supervisor.run(self._stop)
        finally:
            self.supervisor.retire_children()
            self.closed.set()

    def _record(self, event: Event) -> None:
        self._system.record(event)
        if isinstance(event, ChildExited) and self._on_exit is not None:
            self._on_exit(event)
