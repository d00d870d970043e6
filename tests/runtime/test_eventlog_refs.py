"""Envelope references: the log writes a payload once and refers to its envelope by id
afterwards, and the reader restores full typed events from the references."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import attrs
import pytest

import conclave.runtime.eventlog
import conclave.runtime.messages
from conclave.runtime.eventlog import EventLogCorrupt, JsonlEventLog, read_event_log
from conclave.runtime.events import (
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Event,
    Held,
    Redirected,
    Released,
)
from conclave.runtime.messages import Address, Envelope, message
from tests.runtime.helpers import Note

ALICE, BOB, CAROL = Address("agent", "alice"), Address("agent", "bob"), Address("agent", "carol")
BIG = "a payload worth writing once " * 100


def _envelope(text: str = BIG, to: Address = BOB) -> Envelope:
    return Envelope(sender=ALICE, recipient=to, payload=Note(text=text), timestamp=1.0)


def _write(path: Path, events: list[Event]) -> list[dict[str, Any]]:
    log = JsonlEventLog(path)
    for event in events:
        log.record(event)
    log.close()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _life_of(envelope: Envelope) -> list[Event]:
    return [
        Held(at=1.0, envelope=envelope, reason="answers are still arriving"),
        Released(at=2.0, envelope=envelope),
        Delivered(at=3.0, envelope=envelope),
    ]


def test_an_envelope_is_written_in_full_the_first_time_the_log_mentions_it(
    tmp_path: Path,
) -> None:
    envelope = _envelope()

    [line] = _write(tmp_path / "events.jsonl", [Delivered(at=1.0, envelope=envelope)])

    assert line["envelope"]["id"] == envelope.id
    assert line["envelope"]["payload"] == {"kind": "rt_test.note", "text": BIG}


def test_later_events_about_an_envelope_refer_to_it_by_id(tmp_path: Path) -> None:
    envelope = _envelope()

    _, released, delivered = _write(tmp_path / "events.jsonl", _life_of(envelope))

    assert released == {"kind": "released", "at": 2.0, "envelope_ref": envelope.id}
    assert delivered == {"kind": "delivered", "at": 3.0, "envelope_ref": envelope.id}


def test_a_payload_mentioned_three_times_is_written_once(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"

    _write(path, _life_of(_envelope()))

    assert path.read_text(encoding="utf-8").count(BIG) == 1


def test_events_that_refer_to_an_envelope_read_back_as_full_typed_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    events = _life_of(_envelope())
    _write(path, events)

    read = read_event_log(path).events

    assert read == events
    assert [e.envelope.id for e in read] == [e.envelope.id for e in events]  # type: ignore[attr-defined]


def test_a_dead_letter_after_delivery_refers_to_the_delivered_envelope(tmp_path: Path) -> None:
    envelope = _envelope()
    crashed = DeadLetter(
        at=4.0, envelope=envelope, cause=DeadLetterCause.CRASHED, reason="handler raised"
    )
    path = tmp_path / "events.jsonl"

    lines = _write(path, [Delivered(at=3.0, envelope=envelope), crashed])

    assert lines[1]["envelope_ref"] == envelope.id
    assert read_event_log(path).events[1] == crashed


def test_a_redirected_envelope_is_referred_to_with_its_new_recipient(tmp_path: Path) -> None:
    envelope = _envelope()
    redirected = envelope.redirected(CAROL)
    events: list[Event] = [
        Held(at=1.0, envelope=envelope, reason="wait"),
        Redirected(at=2.0, envelope=envelope, to=CAROL),
        Delivered(at=3.0, envelope=redirected),
    ]
    path = tmp_path / "events.jsonl"

    lines = _write(path, events)

    assert lines[2] == {"kind": "delivered", "at": 3.0, "envelope_ref": envelope.id}
    [delivered] = [e for e in read_event_log(path).events if isinstance(e, Delivered)]
    assert delivered.envelope.recipient == CAROL
    assert delivered.envelope == redirected


def test_an_envelope_readdressed_without_a_redirect_event_is_written_in_full(
    tmp_path: Path,
) -> None:
    envelope = _envelope()
    readdressed = attrs.evolve(envelope, recipient=CAROL)  # same id, another recipient
    path = tmp_path / "events.jsonl"

    lines = _write(
        path, [Delivered(at=1.0, envelope=envelope), Delivered(at=2.0, envelope=readdressed)]
    )

    assert lines[1]["envelope"]["recipient"] == {"kind": "agent", "key": "carol"}
    assert read_event_log(path).events[1] == Delivered(at=2.0, envelope=readdressed)


def test_an_envelope_not_mentioned_for_two_generations_is_written_in_full_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 2)
    first = _envelope()
    others = [Delivered(at=1.0, envelope=_envelope(f"other {i}")) for i in range(4)]

    lines = _write(
        tmp_path / "events.jsonl",
        [Delivered(at=0.0, envelope=first), *others, Delivered(at=2.0, envelope=first)],
    )

    assert "envelope" in lines[-1]
    assert "envelope_ref" not in lines[-1]


def test_a_held_envelope_is_referred_to_when_released_however_long_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 2)
    monkeypatch.setattr(conclave.runtime.eventlog, "REFERENCE_REACH", 4)
    held = _envelope()
    others = [Delivered(at=1.0, envelope=_envelope(f"other {i}")) for i in range(10)]
    events = [Held(at=0.0, envelope=held, reason="quiet"), *others, Released(at=2.0, envelope=held)]
    path = tmp_path / "events.jsonl"

    lines = _write(path, events)

    assert lines[-1] == {"kind": "released", "at": 2.0, "envelope_ref": held.id}
    assert read_event_log(path).events == events


def test_held_envelopes_past_the_held_reach_are_written_in_full_when_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 2)
    monkeypatch.setattr(conclave.runtime.eventlog, "HELD_REACH", 1)
    first, second = _envelope("first"), _envelope("second")
    others = [Delivered(at=1.0, envelope=_envelope(f"other {i}")) for i in range(4)]

    lines = _write(
        tmp_path / "events.jsonl",
        [
            Held(at=0.0, envelope=first, reason="quiet"),
            Held(at=0.0, envelope=second, reason="quiet"),
            *others,
            Released(at=2.0, envelope=first),
            Released(at=2.0, envelope=second),
        ],
    )

    assert "envelope_ref" in lines[-2]
    assert lines[-1]["envelope"]["id"] == second.id


@message(kind="rt_test.future_mail")
class FutureMail(Event):
    """An event about an envelope of a kind an older reader does not know."""

    envelope: Envelope


def test_a_reader_remembers_held_envelopes_a_skipped_line_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 2)
    monkeypatch.setattr(conclave.runtime.eventlog, "REFERENCE_REACH", 4)
    monkeypatch.setattr(conclave.runtime.eventlog, "HELD_REACH", 1)
    first, second = _envelope("first"), _envelope("second")
    others = [Delivered(at=1.0, envelope=_envelope(f"other {i}")) for i in range(9)]
    events: list[Event] = [
        Held(at=0.0, envelope=first, reason="quiet"),
        FutureMail(at=0.5, envelope=first),  # the writer forgets that first was held
        Held(at=0.7, envelope=second, reason="quiet"),
        *others,
        Released(at=2.0, envelope=second),
    ]
    path = tmp_path / "events.jsonl"
    _write(path, events)
    monkeypatch.delitem(conclave.runtime.messages._REGISTRY, FutureMail.kind)  # an older reader

    reading = read_event_log(path)

    assert reading.skipped_unknown == 1
    assert reading.events[-1] == events[-1]


def test_a_long_log_of_interleaved_envelopes_reads_back_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small reaches, so that a few hundred events cross many generations on both sides.
    monkeypatch.setattr(conclave.runtime.eventlog, "_GENERATION", 4)
    monkeypatch.setattr(conclave.runtime.eventlog, "REFERENCE_REACH", 8)
    monkeypatch.setattr(conclave.runtime.eventlog, "HELD_REACH", 2)
    rng = random.Random(7)
    live = [_envelope(f"payload {i}") for i in range(6)]
    events: list[Event] = []
    for step in range(900):
        i, roll = rng.randrange(len(live)), rng.random()
        if roll < 0.1:
            events.append(Redirected(at=float(step), envelope=live[i], to=CAROL))
            live[i] = live[i].redirected(CAROL)
        elif roll < 0.2:
            live[i] = _envelope(f"payload {step}")
        elif roll < 0.4:
            events.append(Held(at=float(step), envelope=live[i], reason="quiet"))
        elif roll < 0.5:
            events.append(Released(at=float(step), envelope=live[i]))
        else:
            events.append(Delivered(at=float(step), envelope=live[i]))
    path = tmp_path / "events.jsonl"

    lines = _write(path, events)

    defined = [line["envelope"]["id"] for line in lines if "envelope" in line]
    assert sum("envelope_ref" in line for line in lines) > len(lines) // 2
    assert len(defined) > len(set(defined))  # some were forgotten and written again
    assert read_event_log(path).events == events


def test_a_reference_to_an_envelope_no_earlier_line_defines_is_corruption(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [Delivered(at=1.0, envelope=_envelope())])
    with path.open("a", encoding="utf-8") as f:
        f.write('{"kind":"released","at":2.0,"envelope_ref":999999999}\n')

    with pytest.raises(EventLogCorrupt, match=r":2: .*envelope_ref 999999999 names no envelope"):
        read_event_log(path)


def test_a_log_written_before_envelopes_had_ids_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    line = (
        '{"kind":"delivered","at":1.0,"envelope":{"sender":null,'
        '"recipient":{"kind":"agent","key":"bob"},"payload":{"kind":"rt_test.note","text":"hi"},'
        '"correlation_id":null,"timestamp":0.5,"is_reply":false}}\n'
    )
    path.write_text(line, encoding="utf-8")

    [event] = read_event_log(path).events

    assert event == Delivered(
        at=1.0,
        envelope=Envelope(sender=None, recipient=BOB, payload=Note(text="hi"), timestamp=0.5),
    )
