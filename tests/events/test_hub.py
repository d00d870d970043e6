"""EventHub: subscribers get the events they asked for; none can block or break the sender."""

from __future__ import annotations

import gc
import math
import weakref
from typing import Any

import pytest
import trio
import trio.testing

from conclave.actors.coordination.events import AnswerAdded, VoteAdded
from conclave.actors.events import (
    DomainEvent,
    DropCause,
    EventHub,
    HubStatistics,
    SubscriberDropped,
    Subscription,
    SyncSubscription,
    TextDelta,
)
from conclave.runtime import ChildStarted, Event, open_actor_system


def answer(n: int = 1) -> AnswerAdded:
    return AnswerAdded(at=float(n), agent=f"a{n}", label=f"agent{n}.1", content=f"answer {n}")


def vote(n: int = 1) -> VoteAdded:
    return VoteAdded(at=float(n), voter=f"a{n}", label="agent1.1", reason="best")


KERNEL_EVENT = ChildStarted(at=0.0, supervisor="root", child="coordinator", incarnation=1)


def received(subscription: Subscription[Any]) -> list[Event]:
    """What is buffered in ``subscription`` now."""
    events = []
    while True:
        try:
            events.append(subscription.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            return events


# ---------------------------------------------------------------------------- channels


async def test_a_subscriber_receives_the_domain_events_recorded_after_it_subscribed() -> None:
    hub = EventHub()
    hub.record(answer(1))
    with hub.subscribe() as subscription:
        hub.record(answer(2))
        hub.record(vote(3))

        assert await subscription.receive() == answer(2)
        assert await subscription.receive() == vote(3)


async def test_by_default_a_subscriber_gets_no_kernel_events() -> None:
    hub = EventHub()
    with hub.subscribe() as subscription:
        hub.record(KERNEL_EVENT)
        hub.record(answer())

        assert received(subscription) == [answer()]


async def test_a_subscriber_gets_only_the_kinds_it_asked_for() -> None:
    hub = EventHub()
    kinds: list[type[Event]] = [VoteAdded, ChildStarted]
    with hub.subscribe(kinds) as subscription:
        hub.record(answer())
        hub.record(vote())
        hub.record(KERNEL_EVENT)

        assert received(subscription) == [vote(), KERNEL_EVENT]


async def test_kinds_match_subclasses() -> None:
    hub = EventHub()
    with hub.subscribe([Event]) as subscription:
        hub.record(KERNEL_EVENT)
        hub.record(answer())

        assert received(subscription) == [KERNEL_EVENT, answer()]


async def test_ephemeral_events_are_delivered_to_subscribers() -> None:
    hub = EventHub()
    delta = TextDelta(at=1.0, agent="a1", text="Hel")
    with hub.subscribe() as subscription:
        hub.record(delta)

        assert received(subscription) == [delta]


async def test_a_full_buffer_drops_the_subscriber_without_blocking_the_sender() -> None:
    hub = EventHub()
    with hub.subscribe(buffer=2) as subscription:
        for n in range(1, 6):
            hub.record(answer(n))  # synchronous: it cannot wait for the reader

        assert subscription.dropped is not None
        assert subscription.dropped.cause is DropCause.FELL_BEHIND
        assert hub.statistics().subscribers == 0


async def test_a_dropped_subscriber_reads_what_it_had_buffered_then_its_channel_ends() -> None:
    hub = EventHub()
    with hub.subscribe(buffer=2) as subscription:
        for n in range(1, 6):
            hub.record(answer(n))

        assert [event async for event in subscription] == [answer(1), answer(2)]


async def test_a_drop_is_recorded_through_the_bound_recorder() -> None:
    hub = EventHub()
    recorded: list[Event] = []
    hub.bind(recorded.append)
    with hub.subscribe(buffer=1, name="websocket 10.0.0.7"):
        hub.record(answer(1))
        hub.record(answer(2))

    assert recorded == [
        SubscriberDropped(
            at=2.0,
            subscriber="websocket 10.0.0.7",
            cause=DropCause.FELL_BEHIND,
            detail="its buffer of 1 events was full",
            delivered=1,
        )
    ]


async def test_unbound_a_drop_reaches_the_subscribers_that_asked_for_drops() -> None:
    hub = EventHub()
    with hub.subscribe([SubscriberDropped]) as watcher, hub.subscribe(buffer=1):
        hub.record(answer(1))
        hub.record(answer(2))

        [dropped] = received(watcher)
        assert isinstance(dropped, SubscriberDropped)
        assert dropped.subscriber == "subscriber-2"


async def test_one_subscriber_falling_behind_does_not_affect_another() -> None:
    hub = EventHub()
    with hub.subscribe(buffer=1) as slow, hub.subscribe(buffer=10) as fast:
        for n in range(1, 4):
            hub.record(answer(n))

        assert slow.dropped is not None
        assert fast.dropped is None
        assert received(fast) == [answer(1), answer(2), answer(3)]


async def test_a_subscriber_that_keeps_up_is_never_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hub = EventHub()
    got: list[Event] = []
    with hub.subscribe(buffer=1) as subscription:
        async with trio.open_nursery() as nursery:

            async def read() -> None:
                async for event in subscription:
                    got.append(event)

            nursery.start_soon(read)
            for n in range(1, 101):
                hub.record(answer(n))
                await trio.sleep(0.01)
            hub.close()

    assert subscription.dropped is None
    assert len(got) == 100


async def test_leaving_the_subscription_unsubscribes() -> None:
    hub = EventHub()
    with hub.subscribe():
        assert hub.statistics().subscribers == 1
    hub.record(answer())

    assert hub.statistics().subscribers == 0
    assert hub.statistics().delivered == 0


async def test_aclose_unsubscribes() -> None:
    hub = EventHub()
    subscription = hub.subscribe()
    await subscription.aclose()

    assert hub.statistics().subscribers == 0


async def test_closing_the_hub_ends_every_subscription() -> None:
    hub = EventHub()
    first, second = hub.subscribe(), hub.subscribe()
    hub.record(answer())
    hub.close()

    assert [e async for e in first] == [answer()]
    assert [e async for e in second] == [answer()]
    assert first.dropped is None


def test_a_closed_hub_lets_go_of_the_recorder_it_was_bound_to() -> None:
    class System:
        def record(self, event: Event) -> None: ...

    system = System()
    alive = weakref.ref(system)
    hub = EventHub()
    hub.bind(system.record)
    hub.close()
    del system
    gc.collect()

    assert alive() is None  # a kept hub (a server's finished run) keeps no actor system


def test_subscribing_to_a_closed_hub_is_refused() -> None:
    with EventHub() as hub:
        pass

    with pytest.raises(trio.ClosedResourceError, match="event hub is closed"):
        hub.subscribe()


@pytest.mark.parametrize("buffer", [0, -1, 1.5, math.inf, True])
def test_the_buffer_must_be_a_whole_number_of_events_of_at_least_one(buffer: object) -> None:
    with pytest.raises(ValueError, match="buffer must be a whole number of events >= 1"):
        EventHub().subscribe(buffer=buffer)  # type: ignore[call-overload]


def test_kinds_must_be_event_classes() -> None:
    with pytest.raises(TypeError, match="kinds must be event classes"):
        EventHub().subscribe([str])  # type: ignore[type-var]


# ---------------------------------------------------------------------------- synchronous


def test_a_sync_subscriber_is_called_inline_with_each_event() -> None:
    hub = EventHub()
    seen: list[DomainEvent] = []
    with hub.subscribe_sync(seen.append):
        hub.record(answer(1))
        hub.record(KERNEL_EVENT)
        hub.record(vote(2))

        assert seen == [answer(1), vote(2)]


def test_a_sync_subscriber_that_raises_is_removed_and_recorded() -> None:
    hub = EventHub()
    recorded: list[Event] = []
    hub.bind(recorded.append)

    def fail_on_answers(event: Event) -> None:
        if isinstance(event, AnswerAdded):
            raise RuntimeError("renderer bug")

    subscription = hub.subscribe_sync(fail_on_answers, name="progress")
    hub.record(vote(1))
    hub.record(answer(2))  # must not raise into the recording actor

    assert subscription.dropped is not None
    assert recorded == [
        SubscriberDropped(
            at=2.0,
            subscriber="progress",
            cause=DropCause.RAISED,
            detail="RuntimeError: renderer bug",
            delivered=1,
        )
    ]
    assert hub.statistics().subscribers == 0


def test_a_failing_sync_subscriber_does_not_stop_the_others() -> None:
    hub = EventHub()
    seen: list[DomainEvent] = []

    def broken(event: Event) -> None:
        raise ValueError("nope")

    hub.subscribe_sync(broken)
    hub.subscribe_sync(seen.append)
    hub.record(answer(1))
    hub.record(answer(2))

    assert seen == [answer(1), answer(2)]


def test_a_subscriber_removed_by_another_during_delivery_misses_that_event() -> None:
    hub = EventHub()
    seen: list[DomainEvent] = []
    others: list[SyncSubscription[DomainEvent]] = []

    def close_the_other(event: Event) -> None:
        others[0].close()

    hub.subscribe_sync(close_the_other)
    others.append(hub.subscribe_sync(seen.append))
    hub.record(answer())

    assert seen == []


def test_statistics_count_what_happened() -> None:
    hub = EventHub()
    hub.bind(lambda event: None)  # the two drops are recorded elsewhere, not offered back

    def broken(event: Event) -> None:
        raise ValueError("nope")

    hub.subscribe(buffer=1)
    hub.subscribe_sync(broken)
    hub.subscribe_sync(lambda event: None)
    hub.record(answer(1))
    hub.record(answer(2))
    hub.record(KERNEL_EVENT)

    assert hub.statistics() == HubStatistics(
        subscribers=1, recorded=3, delivered=3, dropped=1, failed=1, closed=False
    )


# ---------------------------------------------------------------------------- as a tap


async def test_the_hub_is_an_event_tap_of_an_actor_system() -> None:
    hub = EventHub()
    with hub.subscribe() as subscription:
        async with open_actor_system(taps=[hub]) as system:
            system.record(answer())

        assert received(subscription) == [answer()]
