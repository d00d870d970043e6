"""Hypothesis strategies for the domain's messages and events, derived from their attrs
fields, so a class is covered the moment it is registered."""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import attrs
from hypothesis import strategies as st

import conclave.actors.kinds  # noqa: F401  (registers every kind the rest of the domain defines)
from conclave.actors.events import DomainEvent
from conclave.runtime import Message
from conclave.runtime.messages import registered_kinds

DOMAIN_CLASSES: dict[str, type[Message]] = {
    kind: cls
    for kind, cls in registered_kinds().items()
    if cls.__module__.startswith("conclave.actors.")
}
"""Every message and event kind registered by ``actors``."""

DOMAIN_EVENTS: dict[str, type[DomainEvent]] = {
    kind: cls
    for kind, cls in DOMAIN_CLASSES.items()
    if issubclass(cls, DomainEvent) and cls is not DomainEvent
}
"""Every concrete domain event kind: the event types of stream-json."""

_SIMPLE: dict[Any, st.SearchStrategy[Any]] = {
    type(None): st.none(),
    str: st.text(),
    bool: st.booleans(),
    int: st.integers(),
    float: st.floats(allow_nan=False, allow_infinity=False),
}


def strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a field annotation: unions, tuples, lists, dicts, enums, attrs classes."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy_for(arg) for arg in args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(strategy_for(args[0]), max_size=4).map(tuple)
    if origin is list:
        return st.lists(strategy_for(args[0]), max_size=4)
    if origin is dict:
        return st.dictionaries(strategy_for(args[0]), strategy_for(args[1]), max_size=4)
    if tp in _SIMPLE:
        return _SIMPLE[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(tp)
    if attrs.has(tp):
        return strategy_for_class(tp)
    raise TypeError(f"no strategy for field type {tp!r}; add one to tests/events/strategies.py")


_BUILT: dict[type[Any], st.SearchStrategy[Any]] = {}


def strategy_for_class(cls: type[Any]) -> st.SearchStrategy[Any]:
    """``st.builds`` with a strategy per attrs field, derived from its annotation."""
    if cls not in _BUILT:
        hints = typing.get_type_hints(cls)
        fields = {f.name: strategy_for(hints[f.name]) for f in attrs.fields(cls) if f.init}
        _BUILT[cls] = st.builds(cls, **fields)
    return _BUILT[cls]
