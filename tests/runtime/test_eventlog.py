"""The JSONL event log: every event kind round-trips; truncation is tolerated, damage is not.

Envelope references, write failures and the streaming reader have their own files
(test_eventlog_refs.py, test_eventlog_failure.py, test_eventlog_reading.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

import conclave.runtime.events
from conclave.runtime import (
    Address,
    ChildExited,
    ChildStarted,
    ChildStopped,
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Envelope,
    Event,
    EventLogCorrupt,
    Held,
    HowStopped,
    JsonlEventLog,
    LogOpened,
    MemoryTap,
    Redirected,
    Released,
    SupervisorAction,
    SupervisorEscalated,
    TapFailed,
    dumps,
    message,
    open_actor_system,
    read_event_log,
)
from conclave.runtime.messages import registered_kinds
from tests.runtime.helpers import Hang, Journal, Note, addr, worker

ENVELOPE = Envelope(
    sender=Address("agent", "alice"),
    recipient=Address("agent", "bob"),
    payload=Note(text="héllo, ✓"),
    correlation_id=7,
    timestamp=12.5,
)

EXAMPLES: list[Event] = [
    Event(at=0.0),
    LogOpened(at=0.0, wall_time=1_700_000_000.25, pid=4242),
    Delivered(at=1.0, envelope=ENVELOPE),
    Delivered(
        at=1.5, envelope=Envelope(sender=None, recipient=Address("x"), payload=Note(text=""))
    ),
    Held(at=2.0, envelope=ENVELOPE, reason="voting is deferred"),
    Released(at=3.0, envelope=ENVELOPE),
    Redirected(at=4.0, envelope=ENVELOPE, to=Address("agent", "carol")),
    *(
        DeadLetter(at=5.0, envelope=ENVELOPE, cause=cause, reason=f"because {cause.value}")
        for cause in DeadLetterCause
    ),
    ChildStarted(at=6.0, supervisor="system", child="agent:bob", incarnation=2),
    ChildExited(
        at=7.0, supervisor="system", child="agent:bob", error=None, action=SupervisorAction.RETIRE
    ),
    ChildExited(
        at=7.5,
        supervisor="system",
        child="agent:bob",
        error="RuntimeError: x",
        action=SupervisorAction.RESTART,
    ),
    ChildStopped(at=8.0, supervisor="system", child="agent:bob", how=HowStopped.KILLED),
    ChildStopped(
        at=8.5,
        supervisor="system",
        child="agent:bob",
        how=HowStopped.CRASHED,
        error="RuntimeError: x",
    ),
    SupervisorEscalated(at=9.0, supervisor="team", error="too many restarts"),
    TapFailed(at=10.0, tap="Broken", error="RuntimeError: tap"),
]


def _write(path: Path, events: list[Event]) -> None:
    log = JsonlEventLog(path)
    for event in events:
        log.record(event)
    log.close()


def test_the_examples_cover_every_kernel_event_kind() -> None:
    kernel_kinds = {
        kind
        for kind, cls in registered_kinds().items()
        if issubclass(cls, Event) and cls.__module__ == conclave.runtime.events.__name__
    }

    assert {type(e).kind for e in EXAMPLES} == kernel_kinds


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).kind)
def test_every_event_kind_round_trips_through_the_log(tmp_path: Path, event: Event) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [event])

    assert read_event_log(path).events == [event]


def test_each_event_is_one_line_on_disk_before_record_returns(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = JsonlEventLog(path)
    log.record(EXAMPLES[1])
    log.record(EXAMPLES[2])

    assert path.read_text(encoding="utf-8").splitlines() == [dumps(EXAMPLES[1]), dumps(EXAMPLES[2])]
    log.close()


def test_a_log_of_every_kind_in_a_row_reads_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, EXAMPLES)

    assert read_event_log(path).events == EXAMPLES


def test_a_truncated_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, EXAMPLES[:3])
    with path.open("a", encoding="utf-8") as f:
        f.write(dumps(EXAMPLES[3])[:20])

    reading = read_event_log(path)
    assert reading.events == EXAMPLES[:3]
    assert reading.truncated_line == 4


def test_a_complete_log_reports_no_truncated_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, EXAMPLES)

    assert read_event_log(path).truncated_line is None


def test_a_damaged_middle_line_raises_event_log_corrupt_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, EXAMPLES[:3])
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = lines[1][:15] + "\n"
    path.write_text("".join(lines), encoding="utf-8")

    with pytest.raises(EventLogCorrupt, match=r"events\.jsonl:2: not a valid event"):
        read_event_log(path)


def test_a_complete_but_invalid_last_line_is_corruption_not_truncation(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, EXAMPLES[:2])
    with path.open("a", encoding="utf-8") as f:
        f.write('{"kind": "delivered"}\n')

    with pytest.raises(EventLogCorrupt, match=":3:"):
        read_event_log(path)


def test_recording_after_close_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = JsonlEventLog(path)
    log.close()
    log.record(EXAMPLES[0])

    assert path.read_text(encoding="utf-8") == ""


async def test_open_actor_system_logs_the_run_starting_with_log_opened(
    tmp_path: Path, journal: Journal
) -> None:
    path = tmp_path / "run" / "events.jsonl"
    async with open_actor_system(event_log=path) as system:
        system.spawn(addr("a"), worker(journal))
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="logged"))

    kinds = [type(e).kind for e in read_event_log(path).events]
    assert kinds == ["log_opened", "child_started", "delivered", "child_stopped"]


async def test_the_log_of_a_cancelled_system_is_complete_and_readable(
    tmp_path: Path, journal: Journal
) -> None:
    path = tmp_path / "events.jsonl"
    with trio.CancelScope() as scope:
        async with open_actor_system(event_log=path) as system:
            system.spawn(addr("a"), worker(journal))
            await system.tell(addr("a"), Hang())
            await system.tell(addr("a"), Note(text="left over"))
            await wait_all_tasks_blocked()
            scope.cancel()

    reading = read_event_log(path)
    assert reading.truncated_line is None
    assert [e.envelope.payload for e in reading.events if isinstance(e, DeadLetter)] == [
        Hang(),
        Note(text="left over"),
    ]


@message(kind="rt_test.blip")
class Blip(Event):
    """A test event that only live watchers need."""

    ephemeral = True


def test_an_ephemeral_event_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = JsonlEventLog(path)
    log.record(Blip(at=1.0))
    log.record(LogOpened(at=2.0, wall_time=0.0, pid=1))
    log.close()
    assert [type(e) for e in read_event_log(path).events] == [LogOpened]


async def test_taps_still_hear_an_ephemeral_event(tmp_path: Path) -> None:
    tap = MemoryTap()
    async with open_actor_system(event_log=tmp_path / "events.jsonl", taps=[tap]) as system:
        system.record(Blip(at=trio.current_time()))
    assert tap.of_type(Blip)
    assert not any(isinstance(e, Blip) for e in read_event_log(tmp_path / "events.jsonl").events)
