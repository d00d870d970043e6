"""Paths into decoded JSON lines: finding the long strings of a line, copying it with
them left out, and naming a place by a JSON Pointer (RFC 6901) and finding it again.

The event log writes long texts once (:mod:`runtime.eventlog_texts`) and the transcripts
write them in pieces (:mod:`actors.agent.transcript_texts`); both find, leave out and put
back strings the same way, with this module.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JsonPath", "PointerError", "locate", "long_strings", "pointer", "without"]

JsonPath = tuple[Any, ...]
"""Keys and indices from a line's top to a value inside it."""


class PointerError(ValueError):
    """A JSON Pointer that does not name a value inside the line."""


def long_strings(value: Any, min_chars: int) -> list[tuple[JsonPath, str]]:
    """The path and text of every string of ``min_chars`` or more in ``value``, in
    document order."""
    found: list[tuple[JsonPath, str]] = []
    _find(value, (), min_chars, found)
    return found


def _find(value: Any, path: JsonPath, min_chars: int, found: list[tuple[JsonPath, str]]) -> None:
    items = value.items() if type(value) is dict else enumerate(value)
    for key, item in items:
        kind = type(item)
        if kind is str:
            if len(item) >= min_chars:
                found.append(((*path, key), item))
        elif kind is dict or kind is list or kind is tuple:
            _find(item, (*path, key), min_chars, found)


def without(data: dict[str, Any], paths: list[JsonPath]) -> dict[str, Any]:
    """A copy of ``data`` with ``None`` at each of ``paths``; only the containers on the
    way are copied (``data`` is not changed)."""
    top = dict(data)
    copies: dict[JsonPath, Any] = {(): top}
    for path in paths:
        container: Any = top
        for depth in range(1, len(path)):
            prefix = path[:depth]
            copy = copies.get(prefix)
            if copy is None:
                copy = container[path[depth - 1]]
                copy = dict(copy) if type(copy) is dict else list(copy)
                container[path[depth - 1]] = copy
                copies[prefix] = copy
            container = copy
        container[path[-1]] = None
    return top


def pointer(path: JsonPath) -> str:
    """The JSON Pointer of ``path``."""
    return "".join("/" + str(key).replace("~", "~0").replace("/", "~1") for key in path)


def locate(data: dict[str, Any], pointer: str) -> tuple[Any, Any]:
    """The container and the key or index ``pointer`` names inside ``data``. Raises
    :class:`PointerError`."""
    if not pointer.startswith("/"):
        raise PointerError(f"{pointer!r} is not a JSON Pointer into the line")
    container: Any = data
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    for depth, token in enumerate(tokens):
        key: Any = token
        if isinstance(container, list):
            if not (token.isascii() and token.isdigit()) or int(token) >= len(container):
                raise PointerError(f"{pointer} names no element of the line")
            key = int(token)
        elif not isinstance(container, dict) or token not in container:
            raise PointerError(f"{pointer} names no field of the line")
        if depth == len(tokens) - 1:
            return container, key
        container = container[key]
    raise PointerError(f"{pointer!r} names the whole line")
