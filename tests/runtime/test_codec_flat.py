"""Flat messages are encoded by a generated function, not cattrs: the same dict cattrs gives
(keys in the same order, same values), for every registered class it takes."""

from __future__ import annotations

import enum
import json
import math
import types
import typing
from typing import Any

import attrs
import pytest
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import given
from hypothesis import strategies as st

import conclave.actors.run.driver  # noqa: F401  (registers the messages a run sends and logs)
from conclave.runtime.codec import converter, encode
from conclave.runtime.codec_flat import flat_encoder
from conclave.runtime.messages import Message, message, registered_kinds


class Colour(enum.Enum):
    RED = "red"


class Size(enum.StrEnum):
    SMALL = "small"


@message(kind="rt_test.flat_fields")
class FlatFields(Message):
    name: str
    count: int
    ready: bool
    ratio: float
    colour: Colour
    size: Size
    maybe_ratio: float | None = None
    maybe_colour: Colour | None = None
    tags: tuple[str, ...] = ()
    maybe_tags: tuple[str, ...] | None = None
    tally: dict[str, int] = attrs.field(factory=dict)
    note: str | None = None


@message(kind="rt_test.nested_field")
class NestedField(Message):
    inner: FlatFields


def _cattrs(obj: Message) -> dict[str, Any]:
    return {"kind": type(obj).kind, **make_dict_unstructure_fn(type(obj), converter)(obj)}


def _same(left: object, right: object) -> bool:
    """Equal, key order included; NaN (carried as "nan") compares as JSON."""
    return left == right and json.dumps(left) == json.dumps(right)


_FLOATS = st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0, 2.5]) | st.floats()


@given(
    ratio=_FLOATS,
    maybe_ratio=st.none() | _FLOATS,
    maybe_colour=st.none() | st.just(Colour.RED),
    tags=st.lists(st.text(), max_size=3).map(tuple),
    maybe_tags=st.none() | st.lists(st.text(), max_size=3).map(tuple),
    tally=st.dictionaries(st.text(), st.integers(), max_size=3),
    note=st.none() | st.text(),
)
def test_a_flat_message_is_encoded_as_cattrs_encodes_it(
    ratio: float,
    maybe_ratio: float | None,
    maybe_colour: Colour | None,
    tags: tuple[str, ...],
    maybe_tags: tuple[str, ...] | None,
    tally: dict[str, int],
    note: str | None,
) -> None:
    fields = FlatFields(
        name="n",
        count=3,
        ready=True,
        ratio=ratio,
        colour=Colour.RED,
        size=Size.SMALL,
        maybe_ratio=maybe_ratio,
        maybe_colour=maybe_colour,
        tags=tags,
        maybe_tags=maybe_tags,
        tally=tally,
        note=note,
    )

    assert _same(encode(fields), _cattrs(fields))


def test_a_flat_encoder_copies_containers_as_cattrs_does() -> None:
    fields = FlatFields(
        name="n", count=1, ready=False, ratio=1.0, colour=Colour.RED, size=Size.SMALL
    )

    encoded = encode(fields)

    assert encoded["tags"] == [] and encoded["tally"] == {}
    assert encoded["tally"] is not fields.tally


def test_a_message_holding_another_is_left_to_cattrs() -> None:
    assert flat_encoder(NestedField, NestedField.kind) is None
    assert flat_encoder(FlatFields, FlatFields.kind) is not None


def _sample(tp: Any) -> Any:
    """A value of field type ``tp``, odd where oddness matters (an infinite float)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return _sample(next(a for a in args if a is not type(None)))
    if origin is tuple:
        return (_sample(args[0]),)
    if origin is dict:
        return {"key": _sample(args[1])}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return next(iter(tp))
    samples: dict[Any, Any] = {str: "text", int: 7, bool: True, float: math.inf}
    return samples[tp]


_FLAT = {
    kind: cls
    for kind, cls in sorted(registered_kinds().items())
    if flat_encoder(cls, kind) is not None
}


def test_most_of_the_packages_messages_are_flat() -> None:
    assert {"agent_status_changed", "llm_request_finished", "round_settled"} <= set(_FLAT)


@pytest.mark.parametrize("kind", sorted(_FLAT))
def test_every_flat_message_of_the_package_is_encoded_as_cattrs_encodes_it(kind: str) -> None:
    cls = _FLAT[kind]
    hints = typing.get_type_hints(cls)
    instance = cls(**{f.name: _sample(hints[f.name]) for f in attrs.fields(cls)})

    assert _same(encode(instance), _cattrs(instance))
