"""Long texts are written once: a string of 1,024 characters or more that a line holds again
is written as ``null`` there, named in the line's ``texts``, and the reader puts it back.
Memory stays bounded: texts not met for two generations are written in full again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import conclave.runtime.eventlog_texts
from conclave.runtime.eventlog import (
    EventLogCorrupt,
    EventLogTooNew,
    JsonlEventLog,
    read_event_log,
)
from conclave.runtime.eventlog_texts import TEXT_MIN_CHARS
from conclave.runtime.events import EVENT_LOG_FORMAT, Delivered, Event, LogOpened
from conclave.runtime.messages import Address, Envelope, message
from tests.runtime.helpers import Note

ANSWER = "The answer: " + "long enough to be worth writing once. " * 28_000  # about 1 MB
SHORT = "x" * (TEXT_MIN_CHARS - 1)


@message(kind="rt_test.bundle")
class Bundle(Event):
    """An event with long texts deep inside it."""

    items: tuple[str, ...] = ()
    named: dict[str, str] = {}
    note: Note | None = None


def _delivery(text: str, at: float = 1.0) -> Delivered:
    envelope = Envelope(
        sender=Address("agent", "a"),
        recipient=Address("coordinator", ""),
        payload=Note(text=text),
        timestamp=at,
    )
    return Delivered(at=at, envelope=envelope)


def _write(path: Path, events: list[Event]) -> list[dict[str, Any]]:
    log = JsonlEventLog(path)
    for event in events:
        log.record(event)
    log.close()
    assert log.failure is None
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_a_long_text_mentioned_by_ten_events_is_written_once(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    events: list[Event] = [_delivery(ANSWER, at=float(i)) for i in range(10)]

    _write(path, events)

    assert path.read_bytes().count(b"The answer: ") == 1
    assert path.stat().st_size < len(ANSWER) * 1.01
    assert read_event_log(path).events == events


def test_later_lines_hold_null_and_name_the_text(tmp_path: Path) -> None:
    first, second = _write(tmp_path / "events.jsonl", [_delivery(ANSWER), _delivery(ANSWER)])

    assert first["envelope"]["payload"]["text"] == ANSWER
    assert first["texts"] == {"/envelope/payload/text": 1}
    assert second["envelope"]["payload"]["text"] is None
    assert second["texts"] == {"/envelope/payload/text": 1}


def test_a_shorter_text_is_written_in_place_every_time(tmp_path: Path) -> None:
    lines = _write(tmp_path / "events.jsonl", [_delivery(SHORT), _delivery(SHORT)])

    assert all("texts" not in line for line in lines)
    assert [line["envelope"]["payload"]["text"] for line in lines] == [SHORT, SHORT]


def test_texts_deep_in_lists_and_under_any_key_read_back(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    other = "Another long text. " * 100
    events: list[Event] = [
        Bundle(at=1.0, items=(ANSWER, "short", other), named={"a/b~c": ANSWER}),
        Bundle(at=2.0, items=(other,), named={"~": other}, note=Note(text=ANSWER)),
    ]

    first, second = _write(path, events)

    assert first["texts"] == {"/items/0": 1, "/items/2": 2, "/named/a~1b~0c": 1}
    assert second["texts"] == {"/items/0": 2, "/named/~0": 2, "/note/text": 1}
    assert read_event_log(path).events == events


def test_a_text_out_of_reach_is_written_in_full_again_and_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog_texts, "GENERATION_TEXTS", 2)
    path = tmp_path / "events.jsonl"
    texts = [f"text {i} ".ljust(TEXT_MIN_CHARS, ".") for i in range(6)]
    events: list[Event] = [_delivery(t, at=float(i)) for i, t in enumerate(texts + texts)]

    lines = _write(path, events)

    # Six texts pass through generations of two: the first ones are gone when they return.
    assert lines[6]["envelope"]["payload"]["text"] == texts[0]
    assert read_event_log(path).events == events


def test_a_line_that_names_a_text_no_earlier_line_wrote_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = _write(path, [LogOpened(at=0.0, wall_time=0.0, pid=1), _delivery(ANSWER)])
    lines[1]["envelope"]["payload"]["text"] = None
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    with pytest.raises(EventLogCorrupt, match=r"events\.jsonl:2: .*text 1"):
        read_event_log(path)


def test_a_text_defined_by_a_line_of_an_unknown_kind_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = _write(path, [LogOpened(at=0.0, wall_time=0.0, pid=1), _delivery(ANSWER)] * 1)
    newer = {"kind": "from_a_newer_version", "at": 0.5, "body": ANSWER, "texts": {"/body": 1}}
    lines[1]["envelope"]["payload"]["text"] = None
    lines[1]["texts"] = {"/envelope/payload/text": 1}
    path.write_text(
        "".join(json.dumps(line) + "\n" for line in [lines[0], newer, lines[1]]), encoding="utf-8"
    )

    reading = read_event_log(path)

    assert reading.skipped_unknown == 1
    assert reading.events[1] == _delivery(ANSWER)


def test_a_log_in_a_newer_format_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [LogOpened(at=0.0, wall_time=0.0, pid=1, format=EVENT_LOG_FORMAT + 1)])

    newer = f"format {EVENT_LOG_FORMAT + 1}, newer than the {EVENT_LOG_FORMAT} this version"
    with pytest.raises(EventLogTooNew, match=newer):
        read_event_log(path)


def test_a_log_without_a_format_reads_as_the_first(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"kind":"log_opened","at":0.0,"wall_time":0.0,"pid":1}\n', encoding="utf-8")

    [opened] = read_event_log(path).events

    assert isinstance(opened, LogOpened)
    assert opened.format == 1
