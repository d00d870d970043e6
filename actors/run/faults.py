"""Fault injection: crash a run's actors at chosen moments, for tests and the chaos harness.

A :class:`FaultPlan` given as ``RunSpec.faults`` is asked after each message an actor of the
run (coordinator, bus, agent) has handled whether the actor crashes now, and when each
incarnation starts whether it crashes in ``started``. A crash is an :class:`InjectedCrash`
raised where a bug would raise: the kernel treats it as any crash (the message just handled
is dead-lettered, the incarnation ends with its background work, the supervisor restarts
it), so a test sees exactly what a real crash at that moment would do. Crashing *after*
the message is handled models a crash while the actor's work is in flight (an LLM call, a
presentation, a quiet-period timer) without losing the message itself: it is what restarts
must survive.

Without a plan the run spawns its actors as they are: the seam costs nothing when unused.
"""

from __future__ import annotations

from typing import Protocol

from runtime import Actor, ActorContext, ActorFactory, Address, Envelope

__all__ = ["FaultPlan", "InjectedCrash", "with_faults"]


class FaultPlan(Protocol):
    """Decides when the run's actors crash. Called synchronously; must not block."""

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        """A reason to crash ``actor`` now that it has handled ``envelope``, or ``None``."""
        ...

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        """A reason to crash ``actor``'s incarnation in ``started``, or ``None``."""
        ...


class InjectedCrash(Exception):
    """A crash a :class:`FaultPlan` asked for."""


def with_faults(factory: ActorFactory, plan: FaultPlan | None) -> ActorFactory:
    """``factory`` itself without a plan; else one whose actors crash when ``plan`` says."""
    if plan is None:
        return factory

    def faulty(context: ActorContext) -> Actor:
        return _Faulty(context, factory(context), plan)

    return faulty


class _Faulty(Actor):
    """Delegates to the real actor, then crashes when the plan says so."""

    def __init__(self, context: ActorContext, inner: Actor, plan: FaultPlan) -> None:
        super().__init__(context)
        self._inner = inner
        self._plan = plan

    async def started(self) -> None:
        reason = self._plan.crash_on_start(self.context.address, self.context.incarnation)
        if reason is not None:
            raise InjectedCrash(reason)
        await self._inner.started()

    async def handle(self, envelope: Envelope) -> None:
        await self._inner.handle(envelope)
        reason = self._plan.crash_after(self.context.address, envelope)
        if reason is not None:
            raise InjectedCrash(reason)

    async def stopping(self) -> None:
        await self._inner.stopping()
