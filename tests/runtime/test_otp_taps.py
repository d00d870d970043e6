"""Tap isolation: a tap that raises is removed and recorded; nobody else notices."""

from __future__ import annotations

from trio.testing import wait_all_tasks_blocked

from conclave.runtime import Delivered, Event, MemoryTap, TapFailed, open_actor_system
from tests.runtime.helpers import Journal, Note, addr, worker


class FailsOnSecondNote:
    """A tap (think: an event log on a full disk) that raises on a delivered "second" note."""

    name = "flaky-log"

    def __init__(self) -> None:
        self.seen: list[Event] = []

    def record(self, event: Event) -> None:
        if isinstance(event, Delivered) and event.envelope.payload == Note(text="second"):
            raise OSError("No space left on device")
        self.seen.append(event)


async def test_a_tap_that_raises_does_not_reach_the_sender_and_the_run_goes_on(
    journal: Journal,
) -> None:
    async with open_actor_system(taps=[FailsOnSecondNote()]) as system:
        system.spawn(addr("a"), worker(journal))
        for text in ("first", "second", "third"):
            await system.tell(addr("a"), Note(text=text))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("first", 1), ("second", 1), ("third", 1)]


async def test_a_tap_that_raises_is_removed(journal: Journal) -> None:
    flaky = FailsOnSecondNote()
    async with open_actor_system(taps=[flaky]) as system:
        system.spawn(addr("a"), worker(journal))
        for text in ("first", "second", "third"):
            await system.tell(addr("a"), Note(text=text))
        await wait_all_tasks_blocked()

    delivered = [e.envelope.payload for e in flaky.seen if isinstance(e, Delivered)]
    assert delivered == [Note(text="first")]


async def test_the_other_taps_hear_tap_failed_and_every_later_event(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[FailsOnSecondNote(), tap]) as system:
        system.spawn(addr("a"), worker(journal))
        for text in ("first", "second", "third"):
            await system.tell(addr("a"), Note(text=text))
        await wait_all_tasks_blocked()

    [failed] = tap.of_type(TapFailed)
    assert (failed.tap, failed.error) == ("flaky-log", "OSError: No space left on device")
    delivered = [e.envelope.payload for e in tap.of_type(Delivered)]
    assert delivered == [Note(text=t) for t in ("first", "second", "third")]


async def test_a_tap_without_a_name_is_named_by_its_class(tap: MemoryTap, journal: Journal) -> None:
    class Broken:
        def record(self, event: Event) -> None:
            raise ValueError("bad tap")

    async with open_actor_system(taps=[Broken(), tap]) as system:
        system.spawn(addr("a"), worker(journal))
        await wait_all_tasks_blocked()

    [failed] = tap.of_type(TapFailed)
    assert failed.tap == "Broken"
