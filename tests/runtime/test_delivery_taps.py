"""Taps that decline plain deliveries (``hears_deliveries = False``) are never handed one;
every other tap hears them all, and a delivery that ends a hold reaches every tap."""

from __future__ import annotations

from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Delivered,
    Event,
    Held,
    MemoryTap,
    Released,
    TapFailed,
    hears_deliveries,
    open_actor_system,
)
from tests.runtime.helpers import Echo, Journal, Note, addr, worker
from tests.runtime.test_routing import HoldUntilGateOpens


class NoDeliveries(MemoryTap):
    """A tap that counts what it is handed, and declines plain deliveries."""

    hears_deliveries = False


def _delivered(events: list[Event]) -> list[object]:
    return [e.envelope.payload for e in events if isinstance(e, Delivered)]


async def test_a_tap_that_declines_deliveries_is_handed_none(journal: Journal) -> None:
    declining = NoDeliveries()
    async with open_actor_system(taps=[declining]) as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Note(text="told"))
        await system.ask(addr("a"), Echo(text="asked"))
        await wait_all_tasks_blocked()

    assert journal.handled("a") == [("told", 1)]
    assert _delivered(declining.events) == []


async def test_a_tap_without_the_attribute_hears_every_delivery_replies_included(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[NoDeliveries(), tap]) as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Note(text="told"))
        await system.ask(addr("a"), Echo(text="asked"))
        await wait_all_tasks_blocked()

    assert _delivered(tap.events) == [Note(text="told"), Echo(text="asked"), Echo(text="asked")]


async def test_the_delivery_that_ends_a_hold_reaches_a_tap_that_declines_deliveries(
    journal: Journal,
) -> None:
    declining = NoDeliveries()
    async with open_actor_system(taps=[declining]) as system:
        system.add_rule(HoldUntilGateOpens())
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Note(text="held"))
        system.update_facts({"gate": "open"})
        await system.tell(addr("a"), Note(text="plain"))
        await wait_all_tasks_blocked()

    kinds = [type(e) for e in declining.events if isinstance(e, Held | Released | Delivered)]
    assert kinds == [Held, Released, Delivered]
    assert _delivered(declining.events) == [Note(text="held")]


class FailsOnDeliveries(MemoryTap):
    """Hears deliveries, and raises on each (think: a debugging tap with a bug)."""

    name = "failing-deliveries"

    def record(self, event: Event) -> None:
        if isinstance(event, Delivered):
            raise RuntimeError("cannot take a delivery")
        super().record(event)


async def test_a_tap_that_raises_on_a_delivery_is_removed_and_hears_nothing_more(
    journal: Journal,
) -> None:
    failing, declining = FailsOnDeliveries(), NoDeliveries()
    async with open_actor_system(taps=[failing, declining]) as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Note(text="first"))
        system.record(TapFailed(at=0.0, tap="marker", error="after the first delivery"))
        await system.tell(addr("a"), Note(text="second"))
        await wait_all_tasks_blocked()

    [failed] = [e for e in declining.of_type(TapFailed) if e.tap == "failing-deliveries"]
    assert failed.error == "RuntimeError: cannot take a delivery"
    assert not any(isinstance(e, TapFailed) and e.tap == "marker" for e in failing.events)
    assert journal.handled("a") == [("first", 1), ("second", 1)]


def test_hears_deliveries_reads_the_attribute_and_defaults_to_yes() -> None:
    assert hears_deliveries(MemoryTap())
    assert not hears_deliveries(NoDeliveries())
