"""The encodings written out by hand for speed (envelopes in the codec; deliveries, held and
released messages in the event log) are exactly what cattrs generates from the classes: same
keys, in the same order, same values. A field added to any of these classes fails here until
the hand-written encoding learns it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import assume, given
from hypothesis import strategies as st

from conclave.runtime.codec import converter, encode_envelope, encode_without, json_line
from conclave.runtime.eventlog import JsonlEventLog
from conclave.runtime.eventlog_texts import TEXT_MIN_CHARS
from conclave.runtime.events import Delivered, Event, Held, Released
from conclave.runtime.messages import Address, Envelope
from tests.runtime.helpers import Note
from tests.runtime.test_codec import strategy_for_class

_GENERATED_ENVELOPE = make_dict_unstructure_fn(Envelope, converter)
_WRITTEN_OUT: tuple[type[Event], ...] = (Delivered, Held, Released)

_ODD_FLOATS = st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0, 1e-300, 2.5])


def _same(left: object, right: object) -> bool:
    """Equal as JSON, key order included (NaN, carried as the string "nan", compares)."""
    return json.dumps(left) == json.dumps(right)


@given(strategy_for_class(Envelope))
def test_an_envelope_is_encoded_as_cattrs_would(envelope: Envelope) -> None:
    assert _same(encode_envelope(envelope), _GENERATED_ENVELOPE(envelope))


@given(_ODD_FLOATS, st.none() | st.just(Address("coordinator")), st.none() | st.integers())
def test_an_envelopes_odd_timestamps_and_missing_sender_are_encoded_as_cattrs_would(
    timestamp: float, sender: Address | None, correlation: int | None
) -> None:
    envelope = Envelope(
        sender=sender,
        recipient=Address("agent", "a1"),
        payload=Note(text="x"),
        correlation_id=correlation,
        timestamp=timestamp,
    )

    assert _same(encode_envelope(envelope), _GENERATED_ENVELOPE(envelope))


def test_the_hand_written_encodings_know_every_field() -> None:
    envelope = Envelope(sender=None, recipient=Address("agent", "a1"), payload=Note(text="x"))

    assert list(encode_envelope(envelope)) == [f.name for f in attrs.fields(Envelope)]
    assert [f.name for f in attrs.fields(Delivered)] == ["at", "envelope"]
    assert [f.name for f in attrs.fields(Held)] == ["at", "envelope", "reason"]
    assert [f.name for f in attrs.fields(Released)] == ["at", "envelope"]


def _event(cls: type[Event], at: float, envelope: Envelope, reason: str) -> Event:
    if cls is Held:
        return Held(at=at, envelope=envelope, reason=reason)
    event: Event = cls(at=at, envelope=envelope)  # type: ignore[call-arg]
    return event


@given(
    st.sampled_from(_WRITTEN_OUT),
    _ODD_FLOATS | st.floats(allow_nan=False),
    strategy_for_class(Envelope),
    st.text(),
)
def test_an_envelope_event_is_logged_as_the_codec_encodes_it_in_full_then_by_reference(
    cls: type[Event], at: float, envelope: Envelope, reason: str
) -> None:
    # The delivery of a message an actor sent itself is not written (test_eventlog_lines).
    assume(cls is not Delivered or envelope.sender != envelope.recipient)
    event = _event(cls, at, envelope, reason)
    written: list[bytes] = []

    class Lines:
        def write(self, data: bytes) -> int:
            written.append(data)
            return len(data)

        def truncate(self, size: int) -> int:
            return size

        def close(self) -> None:
            pass

    log = JsonlEventLog.writing_to(Lines(), Path("events.jsonl"))
    log.record(event)
    log.record(event)

    full = {"kind": cls.kind, **make_dict_unstructure_fn(cls, converter)(event)}
    referred = {**encode_without(event, "envelope"), "envelope_ref": envelope.id}
    # A line with a long text has it left out afterwards, whichever way it was encoded.
    assume(len(json_line(full)) < TEXT_MIN_CHARS)
    assert written == [json_line(full), json_line(referred)]
