"""Every session entry round-trips through the one codec, whatever its fields hold."""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import conclave.actors.session.entries  # noqa: F401  (registers the entries)
from conclave.actors.session.entries import SessionEntry
from conclave.runtime.codec import decode, dumps_bytes, encode
from conclave.runtime.messages import registered_kinds

KINDS: dict[str, type[SessionEntry]] = {
    kind: cls
    for kind, cls in registered_kinds().items()
    if issubclass(cls, SessionEntry) and cls is not SessionEntry
}


def _strategy(tp: Any) -> st.SearchStrategy[Any]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return st.one_of(*(_strategy(arg) for arg in typing.get_args(tp)))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(tp)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        type(None): st.none(),
        str: st.text(),
        bool: st.booleans(),
        int: st.integers(min_value=0, max_value=2**53),
        float: st.floats(allow_nan=False, allow_infinity=False),
    }
    return simple[tp]


def _entries(cls: type[SessionEntry]) -> st.SearchStrategy[SessionEntry]:
    hints = typing.get_type_hints(cls)
    return st.builds(cls, **{f.name: _strategy(hints[f.name]) for f in attrs.fields(cls)})


def test_every_entry_kind_is_named_for_sessions() -> None:
    assert KINDS and all(kind.startswith("session_") for kind in KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
@given(data=st.data())
def test_every_entry_round_trips_through_the_codec(kind: str, data: st.DataObject) -> None:
    entry = data.draw(_entries(KINDS[kind]))
    assert decode(orjson.loads(dumps_bytes(entry)), SessionEntry) == entry
    assert encode(entry)["kind"] == kind
