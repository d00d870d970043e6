"""Crashing a run's actors at chosen moments, through the run's fault seam (``RunSpec.faults``).

A test picks the moment by poking the actor: it sends :class:`Poke` (a message every actor
ignores) when the phase it wants has begun, and :class:`CrashOnPoke` crashes the actor right
after it has handled it. The crash then lands while the actor's work for that phase is in
flight, the way a real crash would.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from conclave.actors.coordination.bus import agent_address
from conclave.actors.run.driver import BUS, COORDINATOR
from conclave.actors.run.faults import FaultPlan
from conclave.runtime import Address, ChildExited, Envelope, Event, Message, message

__all__ = [
    "ACTORS",
    "AllOf",
    "CrashAfter",
    "CrashDuring",
    "CrashOnPoke",
    "CrashOnStart",
    "Poke",
    "crashes",
]


@message(kind="test_poke")
class Poke(Message):
    """Ignored by every actor of a run; a :class:`CrashOnPoke` plan crashes on it."""


ACTORS: dict[str, Callable[[str], Address]] = {
    "coordinator": lambda _: COORDINATOR,
    "bus": lambda _: BUS,
    "agent": agent_address,
}
"""How a test names the actor it crashes (an agent's name is its config id)."""


class CrashOnPoke:
    """Crashes an actor right after it handles a :class:`Poke`; never in ``started``."""

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        if isinstance(envelope.payload, Poke):
            return f"injected crash of {actor}"
        return None

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None


@attrs.define
class CrashAfter:
    """Crashes ``actor`` right after it handles a message ``when`` picks, ``times`` times."""

    actor: Address
    when: Callable[[Envelope], bool]
    times: int = 1
    crashed: int = 0

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        if actor != self.actor or self.crashed >= self.times or not self.when(envelope):
            return None
        self.crashed += 1
        return f"injected crash {self.crashed} of {actor}"

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None


@attrs.define
class CrashDuring:
    """Crashes ``actor`` inside ``handle``, before it acts on the first message ``when``
    picks: that message is lost with the incarnation (dead-lettered)."""

    actor: Address
    when: Callable[[Envelope], bool]
    crashed: int = 0

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        return None

    def crash_during(self, actor: Address, envelope: Envelope) -> str | None:
        if actor != self.actor or self.crashed or not self.when(envelope):
            return None
        self.crashed += 1
        return f"injected crash of {actor} while handling {type(envelope.payload).__name__}"

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None


@attrs.frozen
class CrashOnStart:
    """Crashes ``actor``'s incarnation ``incarnation`` in ``started``."""

    actor: Address
    incarnation: int = 1

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        return None

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        if (actor, incarnation) != (self.actor, self.incarnation):
            return None
        return f"injected crash of {actor} in started()"


class AllOf:
    """Crashes whenever any of ``plans`` says so (the first reason given wins)."""

    def __init__(self, *plans: FaultPlan) -> None:
        self.plans = plans

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        reasons = (plan.crash_after(actor, envelope) for plan in self.plans)
        return next((reason for reason in reasons if reason is not None), None)

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        reasons = (plan.crash_on_start(actor, incarnation) for plan in self.plans)
        return next((reason for reason in reasons if reason is not None), None)


def crashes(events: list[Event], actor: Address) -> list[ChildExited]:
    """The injected crashes of ``actor`` its supervisor saw."""
    return [
        e
        for e in events
        if isinstance(e, ChildExited)
        and e.child == str(actor)
        and e.error is not None
        and "InjectedCrash" in e.error
    ]
