"""The codec: every registered message and event round-trips through JSON unchanged.

Strategies are derived from each class's attrs fields, so a new message type is covered the
moment it is registered. Hypothesis tests are plain (sync) functions: trio_mode leaves them be.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import conclave.runtime  # noqa: F401  (registers the kernel's events)
import tests.runtime.helpers  # noqa: F401  (registers the test messages)
from conclave.runtime import Address, DecodeError, Envelope, Event, Message, dumps, loads, message
from conclave.runtime.messages import registered_kinds
from tests.runtime.helpers import Note

# Only classes this suite knows about: other packages may register types of their own.
OWN_MODULES = ("conclave.runtime.", "tests.runtime.")


@message(kind="rt_test.containers")
class Containers(Message):
    """Containers of the kinds other test modules' messages hold: whichever of those this
    module's process imported first is in :data:`CLASSES` and needs a strategy."""

    tags: tuple[str, ...]
    tally: dict[str, int]


CLASSES: dict[str, type[Message]] = {
    kind: cls for kind, cls in registered_kinds().items() if cls.__module__.startswith(OWN_MODULES)
}


def strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a field annotation, recursing through unions and attrs classes."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy_for(arg) for arg in typing.get_args(tp)))
    args = typing.get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(strategy_for(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(strategy_for(args[0]), strategy_for(args[1]), max_size=3)
    if origin in (list, tuple, frozenset):
        raise TypeError(f"add a strategy for {tp!r} to tests/runtime/test_codec.py")
    simple: dict[Any, st.SearchStrategy[Any]] = {
        type(None): st.none(),
        str: st.text(),
        bool: st.booleans(),
        int: st.integers(),
        float: st.floats(allow_nan=False),
    }
    if tp in simple:
        return simple[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(tp)
    if isinstance(tp, type) and issubclass(tp, Message):
        # Deferred: an envelope's payload may itself be an event that carries an envelope.
        return st.deferred(
            lambda: st.one_of(
                *(strategy_for_class(c) for c in CLASSES.values() if issubclass(c, tp))
            )
        )
    if attrs.has(tp):
        return strategy_for_class(tp)
    raise TypeError(f"no strategy for field type {tp!r}; add one to tests/runtime/test_codec.py")


_BUILT: dict[type[Any], st.SearchStrategy[Any]] = {}


def strategy_for_class(cls: type[Any]) -> st.SearchStrategy[Any]:
    """``st.builds`` with a strategy per attrs field, derived from its annotation."""
    if cls not in _BUILT:
        hints = typing.get_type_hints(cls)
        fields = {f.name: strategy_for(hints[f.name]) for f in attrs.fields(cls) if f.init}
        _BUILT[cls] = st.builds(cls, **fields)
    return _BUILT[cls]


@pytest.mark.parametrize("kind", sorted(CLASSES))
@given(data=st.data())
def test_every_registered_message_round_trips_through_the_codec(
    kind: str, data: st.DataObject
) -> None:
    original = data.draw(strategy_for_class(CLASSES[kind]))

    decoded = loads(dumps(original), Message)

    assert type(decoded) is type(original)
    assert decoded == original


@pytest.mark.parametrize("kind", sorted(k for k, c in CLASSES.items() if issubclass(c, Event)))
@given(data=st.data())
def test_every_event_decodes_as_an_event(kind: str, data: st.DataObject) -> None:
    original = data.draw(strategy_for_class(CLASSES[kind]))

    assert loads(dumps(original), Event) == original


@given(strategy_for_class(Envelope))
def test_envelopes_round_trip_through_the_codec(original: Envelope) -> None:
    assert loads(dumps(original), Envelope) == original


@given(strategy_for_class(Address))
def test_addresses_round_trip_through_the_codec(original: Address) -> None:
    assert loads(dumps(original), Address) == original


def test_the_suite_knows_the_kernel_events() -> None:
    assert {"delivered", "dead_letter", "child_exited", "log_opened"} <= set(CLASSES)


def test_encoded_messages_carry_their_kind_tag() -> None:
    assert json.loads(dumps(Note(text="hi"))) == {"kind": "rt_test.note", "text": "hi"}


def test_decoding_an_unknown_kind_raises_decode_error_naming_it() -> None:
    with pytest.raises(DecodeError, match="unknown message kind 'no_such_kind'"):
        loads('{"kind": "no_such_kind"}', Message)


def test_decoding_without_a_kind_tag_raises_decode_error() -> None:
    with pytest.raises(DecodeError, match="expected an object with a 'kind' tag"):
        loads('{"text": "hi"}', Message)


def test_decoding_an_unexpected_field_raises_decode_error() -> None:
    with pytest.raises(DecodeError):
        loads('{"kind": "rt_test.note", "text": "hi", "extra": 1}', Message)


def test_decoding_a_kind_that_is_not_the_declared_type_raises_decode_error() -> None:
    with pytest.raises(DecodeError, match="is not a Event"):
        loads(dumps(Note(text="hi")), Event)


def test_registering_another_class_under_a_taken_kind_fails() -> None:
    @message(kind="rt_test.taken_by_first")
    class First(Message):
        value: int

    with pytest.raises(TypeError, match="already registered"):

        @message(kind="rt_test.taken_by_first")
        class Second(Message):
            value: int


def test_a_class_of_the_same_name_from_another_module_cannot_take_a_registered_kind() -> None:
    @message(kind="rt_test.taken_by_name")
    class Taken(Message):
        value: int

    impostor = type(
        "Taken",
        (Message,),
        {
            "__annotations__": {"value": "int"},
            "__module__": "somewhere.else",
            "__qualname__": Taken.__qualname__,
        },
    )
    with pytest.raises(TypeError, match="already registered"):
        message(kind="rt_test.taken_by_name")(impostor)


def _envelope() -> Envelope:
    return Envelope(sender=None, recipient=Address("agent", "bob"), payload=Note(text="hi"))


def test_every_envelope_gets_a_new_id_when_it_is_created() -> None:
    first, second = _envelope(), _envelope()

    assert second.id > first.id


def test_an_envelope_id_round_trips_through_the_codec() -> None:
    original = _envelope()

    assert loads(dumps(original), Envelope).id == original.id


def test_an_envelope_encoded_without_an_id_decodes_with_a_fresh_one() -> None:
    data = json.loads(dumps(_envelope()))
    del data["id"]

    decoded = loads(json.dumps(data), Envelope)

    assert decoded == _envelope()
    assert decoded.id > 0


def test_a_redirect_keeps_the_envelope_id() -> None:
    original = _envelope()

    assert original.redirected(Address("agent", "carol")).id == original.id


def test_envelopes_that_differ_only_in_id_are_equal() -> None:
    first, second = _envelope(), _envelope()

    assert first.id != second.id
    assert first == second
    assert hash(first) == hash(second)
