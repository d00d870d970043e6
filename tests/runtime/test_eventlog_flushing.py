"""A run's event log is written while the run waits (``Flushing.WHEN_IDLE``): ``record``
queues, trio's idle moments write, the queue is bounded, and ``close`` writes the rest.
Every guarantee of the log holds: whole lines, in order, a failure stops it cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

import conclave.runtime.eventlog
from conclave.runtime.codec import dumps
from conclave.runtime.eventlog import (
    EventLogFailure,
    Flushing,
    JsonlEventLog,
    read_event_log,
)
from conclave.runtime.events import ChildStarted, Event
from tests.runtime.test_eventlog_failure import EVENTS, FillingDisk


def _line(event: Event) -> bytes:
    return (dumps(event) + "\n").encode()


def _started(i: int) -> ChildStarted:
    return ChildStarted(at=float(i), supervisor="system", child=f"agent:a{i}", incarnation=1)


def _idle_log(path: Path) -> JsonlEventLog:
    return JsonlEventLog(path, flushing=Flushing.WHEN_IDLE)


async def test_an_event_is_not_written_while_trio_has_work_ready(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = _idle_log(path)

    log.record(EVENTS[0])
    await trio.lowlevel.checkpoint()  # a task is ready at once: trio does not wait

    assert path.read_bytes() == b""
    log.close()


async def test_the_queue_is_written_when_trio_waits(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = _idle_log(path)
    for event in EVENTS:
        log.record(event)

    await trio.sleep(0.01)  # real time: trio waits for it

    assert path.read_bytes() == b"".join(_line(e) for e in EVENTS)
    log.close()


async def test_a_full_queue_is_written_at_once_however_busy_trio_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "MAX_PENDING_EVENTS", 3)
    path = tmp_path / "events.jsonl"
    log = _idle_log(path)

    for event in EVENTS[:3]:
        log.record(event)

    assert path.read_bytes() == b"".join(_line(e) for e in EVENTS[:3])
    log.close()


async def test_closing_writes_the_queue(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = _idle_log(path)
    for event in EVENTS:
        log.record(event)

    log.close()

    assert read_event_log(path).events == EVENTS


async def test_a_flush_in_idle_time_stops_taking_events_once_its_time_is_up(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    log = _idle_log(path)
    events = [_started(i) for i in range(300)]
    for event in events:
        log.record(event)

    log.flush(within=0.0)  # one chunk, then the time is up

    written = read_event_log(path).events
    assert 0 < len(written) < len(events)
    assert written == events[: len(written)]
    log.close()
    assert read_event_log(path).events == events


async def test_a_batch_the_disk_cannot_hold_is_cut_back_to_the_lines_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    first = len(_line(EVENTS[0]))
    disk = FillingDisk(path, first + len(_line(EVENTS[1])) // 2)
    reports: list[EventLogFailure] = []
    log = JsonlEventLog.writing_to(
        disk, path, on_failure=reports.append, flushing=Flushing.WHEN_IDLE
    )
    log.record(EVENTS[0])
    log.flush()

    for event in EVENTS[1:]:
        log.record(event)
    log.close()

    assert path.read_bytes() == _line(EVENTS[0])
    assert [(r.line, r.kept_bytes, r.truncated) for r in reports] == [(2, first, True)]


async def test_an_event_the_codec_cannot_encode_stops_the_log_after_the_events_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    reports: list[EventLogFailure] = []
    log = JsonlEventLog(path, on_failure=reports.append, flushing=Flushing.WHEN_IDLE)
    log.record(EVENTS[0])
    log.record(ChildStarted(at=1.0, supervisor=object(), child="c", incarnation=1))  # type: ignore[arg-type]
    log.record(EVENTS[1])

    log.close()

    assert path.read_bytes() == _line(EVENTS[0])
    assert [r.line for r in reports] == [2]
    assert "TypeError" in reports[0].error


async def test_a_closed_log_no_longer_writes_when_trio_waits(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = _idle_log(path)
    log.close()

    log.record(EVENTS[0])
    await trio.sleep(0.01)

    assert path.read_bytes() == b""


def test_a_log_written_when_idle_outside_trio_is_refused_saying_what_to_do(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"

    with pytest.raises(RuntimeError, match=r"inside trio\.run.*Flushing\.EACH_EVENT"):
        _idle_log(path)
    assert not path.exists()


def test_the_queue_of_a_log_nobody_closed_is_written_as_its_trio_run_ends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"

    async def record_and_leave() -> None:
        log = _idle_log(path)
        for event in EVENTS:
            log.record(event)

    trio.run(record_and_leave)

    assert read_event_log(path).events == EVENTS


async def test_the_logs_of_a_trio_run_share_one_idle_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added: list[trio.abc.Instrument] = []
    add = trio.lowlevel.add_instrument

    def counted(instrument: trio.abc.Instrument) -> None:
        added.append(instrument)
        add(instrument)

    monkeypatch.setattr(trio.lowlevel, "add_instrument", counted)
    logs = [_idle_log(tmp_path / f"{i}.jsonl") for i in range(3)]
    for log in logs:
        log.record(EVENTS[0])

    await trio.sleep(0.01)

    assert len(added) == 1
    assert [read_event_log(log.path).events for log in logs] == [EVENTS[:1]] * 3
    for log in logs:
        log.close()


async def test_a_log_whose_queue_was_written_is_not_looked_at_when_trio_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _idle_log(tmp_path / "1.jsonl"), _idle_log(tmp_path / "2.jsonl")
    first.record(EVENTS[0])
    await trio.sleep(0.01)
    flushed: list[JsonlEventLog] = []
    flush = JsonlEventLog.flush

    def watched(log: JsonlEventLog, *, within: float = float("inf")) -> None:
        flushed.append(log)
        flush(log, within=within)

    monkeypatch.setattr(JsonlEventLog, "flush", watched)
    second.record(EVENTS[1])

    await trio.sleep(0.01)

    assert flushed == [second]
    first.close()
    second.close()
