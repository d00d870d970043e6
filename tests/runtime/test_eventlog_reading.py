"""Reading a log streams it: memory stays bounded whatever the file holds, unknown kinds are
skipped and counted, and every kind of file that is not a readable log says so clearly."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

import conclave.runtime.eventlog
from conclave.runtime.codec import dumps
from conclave.runtime.eventlog import (
    MAX_LINE_BYTES,
    EventLogCorrupt,
    EventLogUnreadable,
    JsonlEventLog,
    NotAnEventLog,
    open_event_log,
)
from conclave.runtime.events import ChildStarted, Delivered, Event, LogOpened
from conclave.runtime.messages import Address, Envelope
from tests.runtime.helpers import Note

EVENTS: list[Event] = [
    LogOpened(at=0.0, wall_time=1_700_000_000.0, pid=1),
    ChildStarted(at=1.0, supervisor="system", child="agent:bob", incarnation=1),
    ChildStarted(at=2.0, supervisor="system", child="agent:carol", incarnation=1),
]


def _write(path: Path, events: list[Event]) -> Path:
    log = JsonlEventLog(path)
    for event in events:
        log.record(event)
    log.close()
    return path


def _read_all(path: str | Path, **options: int) -> list[Event]:
    with open_event_log(path, **options) as log:
        return list(log)


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text)


def test_events_are_read_one_line_at_a_time(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", EVENTS)

    with open_event_log(path) as log:
        events = iter(log)
        next(events)
        assert log.summary.lines == 1


def test_the_stream_yields_the_events_before_a_damaged_line_then_raises(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", EVENTS[:2])
    _append(path, "{damaged\n")
    read: list[Event] = []

    with open_event_log(path) as log, pytest.raises(EventLogCorrupt, match=r":3: not a valid"):
        read.extend(log)

    assert read == EVENTS[:2]


def test_an_endless_line_is_refused_without_reading_it_all() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(NotAnEventLog, match=f"longer than {MAX_LINE_BYTES} bytes"):
            _read_all("/dev/zero")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 3 * MAX_LINE_BYTES


def test_a_two_gigabyte_file_of_one_line_is_refused_after_the_line_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    with path.open("wb") as f:
        f.truncate(2 * 1024**3)  # sparse: costs no disk

    with pytest.raises(NotAnEventLog, match="line 1 is not an event"):
        _read_all(path)


def test_a_too_long_line_after_events_is_corruption_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", EVENTS[:1])
    _append(path, dumps(ChildStarted(at=1.0, supervisor="s" * 500, child="c", incarnation=1)))
    _append(path, "\n")

    with pytest.raises(EventLogCorrupt, match=r":2: .*longer than 300 bytes"):
        _read_all(path, max_line_bytes=300)


def test_the_readers_memory_of_envelopes_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 4)
    monkeypatch.setattr(conclave.runtime.eventlog, "REFERENCE_REACH", 8)
    envelopes = [
        Envelope(sender=None, recipient=Address("a"), payload=Note(text=str(i))) for i in range(100)
    ]
    path = _write(tmp_path / "events.jsonl", [Delivered(at=0.0, envelope=e) for e in envelopes])

    with open_event_log(path) as log:
        assert len(list(log)) == 100
        remembered = len(log._recent) + len(log._older)

    assert remembered <= 16


def test_unknown_event_kinds_are_skipped_and_counted(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", EVENTS[:1])
    _append(path, '{"kind": "from_the_future", "at": 1.0, "x": 1}\n')
    _append(path, '{"kind": "from_the_future", "at": 1.5}\n')
    _append(path, dumps(EVENTS[1]) + "\n")

    with open_event_log(path) as log:
        events = list(log)

    assert events == EVENTS[:2]
    assert log.summary.skipped_unknown == 2
    assert log.summary.unknown_kinds == ("from_the_future",)


def test_an_empty_file_reads_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.touch()

    with open_event_log(path) as log:
        assert list(log) == []

    assert log.summary.empty


def test_a_log_with_events_is_not_empty(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", EVENTS[:1])

    with open_event_log(path) as log:
        list(log)

    assert not log.summary.empty


def test_a_file_of_blank_lines_reads_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("\n  \n\n", encoding="utf-8")

    with open_event_log(path) as log:
        assert list(log) == []

    assert log.summary.empty


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\xff\xfe garbage \x1b[2J\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"Just some notes, not a log.\nSecond line.\n",
        b"[1, 2, 3]\n",
        b'"a string"\n',
        b'{"name": "config", "agents": []}\n',
        b'{"kind": "log_opened"}\n',
        b'{"kind": "rt_test.note", "at": 1.0, "text": "a message, not an event"}\n',
        b"[" * 100_000 + b"\n",
        b"[" * 100_000,
        b'{"kind":"log_opened","at":0,"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    ],
    ids=[
        "binary",
        "png",
        "text",
        "json-list",
        "json-string",
        "json-object",
        "no-time",
        "message",
        "deep",
        "deep-unfinished",
        "deep-in-event",
    ],
)
def test_a_file_that_is_not_a_log_is_reported_as_such(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(content)

    with pytest.raises(NotAnEventLog, match=f"{path} is not an event log: line 1"):
        _read_all(path)


def test_deep_nesting_after_events_is_corruption_not_a_recursion_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", EVENTS[:1])
    _append(path, '{"kind":"log_opened","at":0,"pid":' + "[" * 5000 + "]" * 5000 + "}\n")

    with pytest.raises(EventLogCorrupt, match=":2: not a valid event"):
        _read_all(path)


def test_events_nested_in_envelopes_past_the_stack_are_corruption_said_in_one_short_line(
    tmp_path: Path,
) -> None:
    # Each level is two JSON levels (event, envelope): within orjson's depth limit of 1024,
    # but decoding it takes several Python frames a level, past the recursion limit.
    line = '{"kind":"log_opened","at":0,"wall_time":0,"pid":1}'
    for _ in range(500):
        line = (
            '{"kind":"delivered","at":0,"envelope":{"sender":null,'
            f'"recipient":{{"kind":"a","key":""}},"payload":{line}}}}}'
        )
    path = _write(tmp_path / "events.jsonl", EVENTS[:1])
    _append(path, line + "\n")

    with pytest.raises(EventLogCorrupt, match=r":2: not a valid event .*recursion") as raised:
        _read_all(path)
    assert len(str(raised.value)) < 600


def test_an_unfinished_first_line_that_begins_like_an_event_is_a_cut_off_log(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(EVENTS[0])[:25], encoding="utf-8")

    with open_event_log(path) as log:
        assert list(log) == []

    assert log.summary.truncated_line == 1


def test_a_missing_file_is_unreadable_saying_so(tmp_path: Path) -> None:
    with pytest.raises(EventLogUnreadable, match=r"no event log at .*nope\.jsonl"):
        _read_all(tmp_path / "nope.jsonl")


def test_a_directory_is_unreadable_saying_so(tmp_path: Path) -> None:
    with pytest.raises(EventLogUnreadable, match=r"is a directory; pass the events\.jsonl"):
        _read_all(tmp_path)


def test_a_file_without_permission_is_unreadable_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The suite may run as root, which reads any file: deny the open itself.
    def denied(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(conclave.runtime.eventlog, "open", denied, raising=False)

    with pytest.raises(EventLogUnreadable, match="permission denied; check its permissions"):
        _read_all(tmp_path / "events.jsonl")


def test_a_proc_file_is_not_an_event_log() -> None:
    with pytest.raises(NotAnEventLog, match="/proc/self/status is not an event log"):
        _read_all("/proc/self/status")


def test_a_read_error_is_unreadable_naming_the_line_it_stopped_after() -> None:
    # Offset 0 of a process's memory is never mapped: reading it fails with EIO.
    with pytest.raises(EventLogUnreadable, match=r"cannot read /proc/self/mem after line 0"):
        _read_all("/proc/self/mem")


def test_a_file_holding_two_runs_counts_them(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.jsonl", EVENTS)
    second = _write(tmp_path / "b.jsonl", EVENTS)
    both = tmp_path / "both.jsonl"
    both.write_bytes(first.read_bytes() + second.read_bytes())

    with open_event_log(both) as log:
        list(log)

    assert log.summary.runs == 2


def test_a_string_with_a_lone_surrogate_reads_back(tmp_path: Path) -> None:
    event = Delivered(
        at=1.0, envelope=Envelope(sender=None, recipient=Address("a"), payload=Note(text="\ud800"))
    )
    path = _write(tmp_path / "events.jsonl", [event])

    with open_event_log(path) as log:
        assert list(log) == [event]
