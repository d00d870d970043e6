"""Flat messages encoded without cattrs: a generated function per class.

Most of what a run logs is flat: events and payloads whose fields hold strings, numbers,
booleans, ``None``, enums, and tuples or string-keyed dicts of those (an agent's status, an
LLM call's usage, a verdict). cattrs' generated function for such a class calls a hook per
float field and the codec then copies its dict to put ``kind`` first; this writes the dict
with ``kind`` first in one expression, the same dict cattrs gives (a spec holds them equal
on every event and payload of a run), in about a third of the time: a 2,000-agent run's log
encodes ~50,000 such objects. Any other class (a nested message, a path, a float in a
container) goes to cattrs, as before.
"""

from __future__ import annotations

import enum
import math
import types
import typing
from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["flat_encoder"]

_SCALARS: frozenset[Any] = frozenset({str, int, bool, type(None)})


class _Shape(enum.Enum):
    """How a flat field's value is written."""

    AS_IS = "as_is"
    """Strings, integers, booleans, ``None``, enums that are strings or integers (orjson
    writes their value)."""
    VALUE = "value"
    """Any other enum (or ``None``): its value, as cattrs writes it."""
    NUMBER = "number"
    """May hold a float: infinity and NaN are written as ``"inf"``, ``"-inf"``, ``"nan"``."""
    LIST = "list"
    """A tuple (or ``None``): written as a list, as cattrs does."""
    DICT = "dict"
    """A dict (or ``None``): copied, as cattrs does."""


def _scalar(tp: Any) -> bool:
    return tp in _SCALARS or (
        isinstance(tp, type) and issubclass(tp, enum.Enum) and issubclass(tp, str | int)
    )


def _shape(tp: Any) -> _Shape | None:
    """How a field of type ``tp`` is written, or ``None`` if it is not flat."""
    if _scalar(tp):
        return _Shape.AS_IS
    if tp is float:
        return _Shape.NUMBER
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _Shape.VALUE
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        present = [arg for arg in args if arg is not type(None)]
        shapes = {_shape(arg) for arg in present}
        if shapes <= {_Shape.AS_IS, _Shape.NUMBER}:
            return _Shape.NUMBER if _Shape.NUMBER in shapes else _Shape.AS_IS
        if len(present) == 1 and None not in shapes:
            return shapes.pop()  # a container, or None
        return None
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and _scalar(args[0]):
        return _Shape.LIST
    if origin is dict and len(args) == 2 and args[0] is str and _scalar(args[1]):
        return _Shape.DICT
    return None


def _number(value: Any) -> Any:
    if type(value) is float and not math.isfinite(value):
        return repr(value)
    return value


def _value(value: Any) -> Any:
    return None if value is None else value.value


def _listed(value: Any) -> Any:
    return None if value is None else list(value)


def _copied(value: Any) -> Any:
    return None if value is None else dict(value)


_WRAPPERS = {
    _Shape.NUMBER: "_number",
    _Shape.VALUE: "_value",
    _Shape.LIST: "_listed",
    _Shape.DICT: "_copied",
}


def flat_encoder(cls: type, kind: str) -> Callable[[Any], dict[str, Any]] | None:
    """A function from an instance of the attrs class ``cls`` to its JSON-ready dict,
    ``{"kind": kind, <fields in order>}``, or ``None`` if ``cls`` is not flat."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: cattrs will say what
        return None
    items: list[str] = [f"'kind': {kind!r}"]
    for field in attrs.fields(cls):
        if field.name.startswith("_") or not field.init:
            return None
        shape = _shape(hints.get(field.name))
        if shape is None:
            return None
        value = f"o.{field.name}"
        wrapper = _WRAPPERS.get(shape)
        items.append(f"{field.name!r}: {value if wrapper is None else f'{wrapper}({value})'}")
    source = f"def encode(o):\n    return {{{', '.join(items)}}}\n"
    namespace: dict[str, Any] = {
        "_number": _number,
        "_value": _value,
        "_listed": _listed,
        "_copied": _copied,
    }
    exec(compile(source, f"<flat encoder {cls.__qualname__}>", "exec"), namespace)
    encoder: Callable[[Any], dict[str, Any]] = namespace["encode"]
    return encoder
