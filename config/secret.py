"""API keys as a type of their own, so a key cannot reach output by accident.

A :class:`Secret`'s ``repr``, ``str``, format and JSON form are masked; only
:meth:`Secret.reveal` gives the key, and only code that hands it to an SDK calls it. Passing a
``Secret`` where a ``str`` is expected is a type error, not a silent leak.

Every key made into a ``Secret`` is remembered (:func:`secrets_in_use`), so one redaction
pass over an error string (``actors.llm.redaction``) can remove the exact keys a run uses,
whatever a provider echoes back.
"""

from __future__ import annotations

import hmac
from typing import Any

__all__ = ["MASK", "MIN_SECRET_LENGTH", "Secret", "secrets_in_use"]

MASK = "********"

MIN_SECRET_LENGTH = 8
"""The shortest value redacted by value, here and everywhere (docs/security.md): removing
every occurrence of a shorter string (a local server's placeholder key such as ``none`` or
``ollama``) would mangle ordinary text, and no provider issues keys that short."""

_IN_USE: set[str] = set()


def secrets_in_use() -> frozenset[str]:
    """Every key made into a :class:`Secret` in this process (at least
    :data:`MIN_SECRET_LENGTH` characters)."""
    return frozenset(_IN_USE)


class Secret:
    """A key or token. Compared and hashed by value (configs that hold equal keys are equal,
    so agents with the same key share a client); shown only as ``********``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a Secret holds a string, got {type(value).__name__}")
        self._value = value
        if len(value) >= MIN_SECRET_LENGTH:
            _IN_USE.add(value)

    def reveal(self) -> str:
        """The key itself: only for handing to the client that sends it."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return format(MASK, spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def to_json(self) -> str:
        """The JSON form: the mask (register it as the unstructure hook of a converter)."""
        return MASK

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling (a process hop) carries the key: it is the one way to copy it on purpose.
        return (Secret, (self._value,))
