"""A hub hears plain deliveries only while a subscriber asks for them: a run builds none for
a hub whose subscribers want domain events (the REPL's, the server's)."""

from __future__ import annotations

import trio
from trio.testing import wait_all_tasks_blocked

from conclave.actors.events import DomainEvent, EventHub
from conclave.actors.run.driver import drive
from conclave.runtime import Delivered, Event, open_actor_system
from tests.events.test_watch_run import spec
from tests.runtime.helpers import Journal, Note, addr, worker


def test_a_bound_hub_hears_deliveries_while_a_subscriber_asks_for_them_or_a_class_above() -> None:
    hub = EventHub()
    hub.bind(lambda event: None, on_hearing_changed=lambda: None)
    answers: list[bool] = []
    with hub.subscribe_sync(lambda event: None, [DomainEvent]):
        answers.append(hub.hears_deliveries)
        with hub.subscribe_sync(lambda event: None, [Event]):
            answers.append(hub.hears_deliveries)
        answers.append(hub.hears_deliveries)

    assert answers == [False, True, False]


def test_a_hub_that_cannot_tell_the_system_of_changes_hears_every_delivery() -> None:
    plain, bound_without_callback, unbound = EventHub(), EventHub(), EventHub()
    bound_without_callback.bind(lambda event: None)
    unbound.bind(lambda event: None, on_hearing_changed=lambda: None)
    unbound.unbind()

    assert plain.hears_deliveries
    assert bound_without_callback.hears_deliveries
    assert unbound.hears_deliveries


def test_subscribers_coming_and_going_tell_the_bound_callback_each_time() -> None:
    hub, told = EventHub(), list[bool]()
    hub.bind(lambda event: None, on_hearing_changed=lambda: told.append(hub.hears_deliveries))
    with hub.subscribe_sync(lambda event: None, [Delivered]):
        pass
    with hub.subscribe(kinds=[Delivered]):
        pass

    assert told == [True, False, True, False]


async def test_a_bound_hub_is_offered_plain_deliveries_only_while_they_are_asked_for() -> None:
    hub, journal, heard = EventHub(), Journal(), list[Event]()
    async with open_actor_system(taps=[hub]) as system:
        hub.bind(system.record, on_hearing_changed=system.refresh_taps)
        system.refresh_taps()  # as the run driver does: unbound, the hub heard everything
        system.spawn(addr("a"), worker(journal))
        await wait_all_tasks_blocked()
        before = hub.statistics().recorded
        await system.tell(addr("a"), Note(text="unheard"))
        unheard = hub.statistics().recorded - before
        with hub.subscribe_sync(heard.append, [Delivered]):
            await system.tell(addr("a"), Note(text="heard"))
        await system.tell(addr("a"), Note(text="unheard again"))
        await wait_all_tasks_blocked()

    assert unheard == 0
    assert [e.envelope.payload for e in heard if isinstance(e, Delivered)] == [Note(text="heard")]
    assert [text for text, _ in journal.handled("a")] == ["unheard", "heard", "unheard again"]


async def test_a_run_driven_with_a_hub_gives_deliveries_to_a_subscriber_that_joins_it() -> None:
    hub, heard = EventHub(), list[Delivered]()

    def join(handle: object) -> None:
        hub.subscribe_sync(heard.append, [Delivered])

    with hub, trio.fail_after(30):
        result = await drive(spec(agents=2), hub, on_open=join)

    assert result.termination == "completed"
    assert len(heard) >= result.messages_routed - result.dead_letters > 0
