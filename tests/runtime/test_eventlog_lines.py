"""Format 3's fewer lines: releases written together are one line, and an actor's message to
itself is not written; the reader gives back the events the lines stand for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import conclave.runtime.eventlog
from conclave.runtime.eventlog import (
    EventLogCorrupt,
    Flushing,
    JsonlEventLog,
    read_event_log,
)
from conclave.runtime.events import (
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Event,
    Held,
    Redirected,
    Released,
)
from conclave.runtime.messages import Address, Envelope
from tests.runtime.helpers import Note

ALICE, BOB, CAROL = Address("agent", "alice"), Address("agent", "bob"), Address("agent", "carol")


def _envelope(text: str, to: Address = BOB, sender: Address = ALICE) -> Envelope:
    return Envelope(sender=sender, recipient=to, payload=Note(text=text), timestamp=1.0)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_in_batches(path: Path, events: list[Event]) -> list[dict[str, Any]]:
    """As a run writes its log: queued, then written together."""
    log = JsonlEventLog(path, flushing=Flushing.WHEN_IDLE)
    for event in events:
        log.record(event)
    log.close()
    return _lines(path)


def _write_each(path: Path, events: list[Event]) -> list[dict[str, Any]]:
    log = JsonlEventLog(path)
    for event in events:
        log.record(event)
    log.close()
    return _lines(path)


def _held_then_released(envelopes: list[Envelope]) -> list[Event]:
    held: list[Event] = [Held(at=1.0, envelope=e, reason="votes wait") for e in envelopes]
    released: list[Event] = []
    for i, envelope in enumerate(envelopes):
        at = 2.0 + i / 1000
        released += [Released(at=at, envelope=envelope), Delivered(at=at, envelope=envelope)]
    return held + released


async def test_releases_written_together_are_one_line_listing_their_envelopes(
    tmp_path: Path,
) -> None:
    envelopes = [_envelope(f"update {i}") for i in range(3)]

    lines = _write_in_batches(tmp_path / "events.jsonl", _held_then_released(envelopes))

    assert [line["kind"] for line in lines] == ["held", "held", "held", "released"]
    assert lines[3] == {"kind": "released", "at": 2.0, "envelope_refs": [e.id for e in envelopes]}


async def test_a_line_of_releases_reads_back_as_each_release_then_its_delivery(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    envelopes = [_envelope(f"update {i}") for i in range(3)]
    _write_in_batches(path, _held_then_released(envelopes))

    events = read_event_log(path).events[3:]

    expected: list[Event] = []
    for envelope in envelopes:
        expected += [Released(at=2.0, envelope=envelope), Delivered(at=2.0, envelope=envelope)]
    assert events == expected


async def test_a_release_not_followed_by_its_delivery_is_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    envelope = _envelope("redirected")
    events: list[Event] = [
        Held(at=1.0, envelope=envelope, reason="votes wait"),
        Released(at=2.0, envelope=envelope),
        Redirected(at=2.0, envelope=envelope, to=CAROL),
        Delivered(at=2.0, envelope=envelope.redirected(CAROL)),
    ]

    lines = _write_in_batches(path, events)

    assert [line["kind"] for line in lines] == ["held", "released", "redirected", "delivered"]
    assert lines[1] == {"kind": "released", "at": 2.0, "envelope_ref": envelope.id}
    assert read_event_log(path).events == events


async def test_a_release_of_an_envelope_the_reader_forgot_is_written_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "HELD_REACH", 0)
    path = tmp_path / "events.jsonl"
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 1)
    envelope, other = _envelope("held long ago"), _envelope("since")
    events: list[Event] = [
        Held(at=1.0, envelope=envelope, reason="votes wait"),
        Delivered(at=1.5, envelope=other),
        Released(at=2.0, envelope=envelope),
        Delivered(at=2.0, envelope=envelope),
    ]

    lines = _write_in_batches(path, events)

    assert [line["kind"] for line in lines] == ["held", "delivered", "released", "delivered"]
    assert lines[2]["envelope"]["id"] == envelope.id
    assert read_event_log(path).events == events


def test_a_log_written_event_by_event_writes_each_release_and_delivery(tmp_path: Path) -> None:
    envelopes = [_envelope(f"update {i}") for i in range(2)]

    lines = _write_each(tmp_path / "events.jsonl", _held_then_released(envelopes))

    kinds = [line["kind"] for line in lines]
    assert kinds == ["held", "held", "released", "delivered", "released", "delivered"]


@pytest.mark.parametrize("write", [_write_each, _write_in_batches])
async def test_the_delivery_of_a_message_an_actor_sent_itself_is_not_written(
    tmp_path: Path, write: Any
) -> None:
    to_itself = _envelope("round settled", to=ALICE, sender=ALICE)
    to_bob = _envelope("an answer")

    lines = write(
        tmp_path / "events.jsonl",
        [Delivered(at=1.0, envelope=to_itself), Delivered(at=2.0, envelope=to_bob)],
    )

    assert [line["envelope"]["id"] for line in lines] == [to_bob.id]


@pytest.mark.parametrize("flushing", [Flushing.EACH_EVENT, Flushing.WHEN_IDLE])
async def test_a_log_without_deliveries_writes_every_routing_fact_but_plain_deliveries(
    tmp_path: Path, flushing: Flushing
) -> None:
    path = tmp_path / "events.jsonl"
    plain, held, dropped = (_envelope(t) for t in ("an answer", "later", "dropped"))
    log = JsonlEventLog(path, flushing=flushing, deliveries=False)
    for event in [
        Delivered(at=1.0, envelope=plain),
        Held(at=1.0, envelope=held, reason="votes wait"),
        DeadLetter(at=1.5, envelope=dropped, cause=DeadLetterCause.DROPPED, reason="mode"),
        Released(at=2.0, envelope=held),
        Delivered(at=2.0, envelope=held),
    ]:
        log.record(event)
    log.close()

    kinds = [line["kind"] for line in _lines(path)]
    assert kinds == ["held", "dead_letter", "released"]
    read = read_event_log(path).events
    assert [e.envelope.id for e in read if isinstance(e, Held | Released)] == [held.id, held.id]


async def test_a_log_without_deliveries_still_writes_releases_together_as_one_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    envelopes = [_envelope(f"update {i}") for i in range(3)]
    log = JsonlEventLog(path, flushing=Flushing.WHEN_IDLE, deliveries=False)
    for event in _held_then_released(envelopes):
        log.record(event)
    log.close()

    assert [line["kind"] for line in _lines(path)] == ["held", "held", "held", "released"]


async def test_a_message_an_actor_sent_itself_is_written_if_held_or_dead_lettered(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    held, dropped = (_envelope(t, to=ALICE, sender=ALICE) for t in ("later", "dropped"))
    events: list[Event] = [
        Held(at=1.0, envelope=held, reason="votes wait"),
        DeadLetter(at=1.0, envelope=dropped, cause=DeadLetterCause.DROPPED, reason="mode"),
    ]

    _write_in_batches(path, events)

    assert read_event_log(path).events == events


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"kind":"released","at":2.0,"envelope_refs":[99]}', "envelope_ref 99 names no envelope"),
        ('{"kind":"released","at":2.0,"envelope_refs":[]}', "expected a list of envelope ids"),
        ('{"kind":"released","at":2.0,"envelope_refs":["1"]}', "expected an envelope id"),
        (
            '{"kind":"released","at":2.0,"envelope_refs":[1],"reason":"x"}',
            "has other keys: ['at', 'kind', 'reason']",
        ),
        ('{"kind":"delivered","at":2.0,"envelope_refs":[1]}', "only a 'released' line may"),
    ],
)
def test_a_malformed_line_of_releases_is_corruption_naming_what_is_wrong(
    tmp_path: Path, line: str, why: str
) -> None:
    path = tmp_path / "events.jsonl"
    envelope = _envelope("held")
    _write_each(path, [Held(at=1.0, envelope=envelope, reason="votes wait")])
    held_id = envelope.id
    text = line.replace("[1]", f"[{held_id}]")
    with path.open("a", encoding="utf-8") as file:
        file.write(text + "\n")

    with pytest.raises(EventLogCorrupt, match=f":2: not a valid event .*{_escaped(why)}"):
        read_event_log(path)


def _escaped(text: str) -> str:
    return text.replace("[", r"\[").replace("]", r"\]")
