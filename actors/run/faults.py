"""Fault injection: crash a run's actors at chosen moments, for tests and the chaos harness.

A :class:`FaultPlan` given as ``RunSpec.faults`` is asked after each message an actor of the
run (coordinator, bus, agent) has handled whether the actor crashes now, and when each
incarnation starts whether it crashes in ``started``. A crash is an :class:`InjectedCrash`
raised where a bug would raise: the kernel treats it as any crash (the message just handled
is dead-lettered, the incarnation ends with its background work, the supervisor restarts
it), so a test sees exactly what a real crash at that moment would do. Crashing *after*
the message is handled models a crash while the actor's work is in flight (an LLM call, a
presentation, a quiet-period timer) without losing the message itself: it is what restarts
must survive. A plan may also crash an actor *inside* ``handle``, before it acts on the
message (:class:`CrashesDuring`): the message is then lost with the incarnation, as it would
be to a bug at the top of the handler. A crash in ``started`` goes to an actor that handles
its own start failures (:class:`HandlesStartFailure`: an agent excludes itself), as a bug
raised there would.

Without a plan the run spawns its actors as they are: the seam costs nothing when unused.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from conclave.runtime import Actor, ActorContext, ActorFactory, Address, Envelope

__all__ = ["CrashesDuring", "FaultPlan", "HandlesStartFailure", "InjectedCrash", "with_faults"]


class FaultPlan(Protocol):
    """Decides when the run's actors crash. Called synchronously; must not block."""

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        """A reason to crash ``actor`` now that it has handled ``envelope``, or ``None``."""
        ...

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        """A reason to crash ``actor``'s incarnation in ``started``, or ``None``."""
        ...


@runtime_checkable
class CrashesDuring(Protocol):
    """A plan that may also crash an actor while it handles a message."""

    def crash_during(self, actor: Address, envelope: Envelope) -> str | None:
        """A reason to crash ``actor`` inside ``handle``, before it acts on ``envelope``."""
        ...


@runtime_checkable
class HandlesStartFailure(Protocol):
    """An actor whose ``started`` catches its own failures (a bug there) and deals with them."""

    def start_failed(self, error: Exception) -> None: ...


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
        if reason is None:
            await self._inner.started()
        elif isinstance(self._inner, HandlesStartFailure):
            self._inner.start_failed(InjectedCrash(reason))
        else:
            raise InjectedCrash(reason)

    async def handle(self, envelope: Envelope) -> None:
        plan = self._plan
        if isinstance(plan, CrashesDuring):
            reason = plan.crash_during(self.context.address, envelope)
            if reason is not None:
                raise InjectedCrash(reason)
        await self._inner.handle(envelope)
        reason = self._plan.crash_after(self.context.address, envelope)
        if reason is not None:
            raise InjectedCrash(reason)

    async def stopping(self) -> None:
        await self._inner.stopping()
