"""Typed messages, addresses and the envelope that carries them.

Every payload is a frozen, keyword-only attrs class registered under a ``kind`` tag.
Inside the process instances travel by reference; the codec turns them into JSON only at
boundaries (event log, websocket, process hops), so registering costs nothing on the hot path.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, dataclass_transform

import attrs

__all__ = [
    "Address",
    "Envelope",
    "Message",
    "find_message_class",
    "message",
    "message_class",
    "registered_kinds",
]


@attrs.frozen(kw_only=True)
class Message:
    """Base of every payload. Subclasses are declared with :func:`message`."""

    kind: ClassVar[str] = "message"

    # __repr__, __eq__ and __hash__ do what attrs would have compiled for each class, read
    # from its fields when called: compiling them was over half of defining a message class
    # (0.19 of 0.33 ms; the repr 0.12), and a run defines ~107 before its first request.
    # Messages are compared and hashed off the hot path (tests, replay), not per delivery.

    def __repr__(self) -> str:
        """``Name(field=value, ...)`` over the fields attrs shows; a cycle as ``...``."""
        seen: set[int] | None = getattr(_repring, "ids", None)
        if seen is None:
            seen = _repring.ids = set()
        if id(self) in seen:
            return "..."
        seen.add(id(self))
        try:
            shown = ", ".join(
                f"{field.name}={_shown(self, field)}"
                for field in attrs.fields(type(self))
                if field.repr is not False
            )
            return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({shown})"
        finally:
            seen.discard(id(self))

    def __eq__(self, other: object) -> bool:
        """Equal to a message of the same class whose compared fields (``eq``, through
        their ``eq_key``) are equal."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        for name, key in _fields_of(self.__class__).compared:
            mine, theirs = getattr(self, name), getattr(other, name)
            if key is not None:
                mine, theirs = key(mine), key(theirs)
            if not mine == theirs:
                return False
        return True

    def __hash__(self) -> int:
        """Over the class and the hashed fields (``hash``, or else ``eq``), as attrs does."""
        hashed = _fields_of(self.__class__).hashed
        return hash(
            (
                self.__class__,
                *(
                    getattr(self, name) if key is None else key(getattr(self, name))
                    for name, key in hashed
                ),
            )
        )


_repring = threading.local()
"""The ids of the messages whose repr is being written on this thread (a message that
contains itself is written ``...`` inside)."""


@attrs.frozen
class _Fields:
    """A message class's fields, as its ``__eq__`` and ``__hash__`` read them: each name
    with its ``eq_key`` (``None``: the value itself)."""

    compared: tuple[tuple[str, Callable[[Any], Any] | None], ...]
    hashed: tuple[tuple[str, Callable[[Any], Any] | None], ...]


_FIELDS: dict[type[Message], _Fields] = {}


def _fields_of(cls: type[Message]) -> _Fields:
    found = _FIELDS.get(cls)
    if found is None:
        fields = attrs.fields(cls)
        found = _FIELDS[cls] = _Fields(
            compared=tuple((f.name, f.eq_key) for f in fields if f.eq),
            hashed=tuple(
                (f.name, f.eq_key) for f in fields if f.hash is True or (f.hash is None and f.eq)
            ),
        )
    return found


def _shown(obj: Message, field: attrs.Attribute[object]) -> str:
    value = getattr(obj, field.name) if field.init else getattr(obj, field.name, attrs.NOTHING)
    written = field.repr  # True, or a callable of the field's own
    return str(written(value)) if callable(written) else repr(value)


_REGISTRY: dict[str, type[Message]] = {}

M = TypeVar("M", bound=type[Message])


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(attrs.field,))
def message(kind: str | None = None) -> Callable[[M], M]:
    """Declare a payload class: frozen, keyword-only, registered under ``kind``.

    The tag defaults to the class name in snake_case. Registering two classes under one tag
    is a programming error and fails at import time, not at decode time. Only the same class
    re-created (its module re-imported) may take its tag again; a same-named class from
    another module may not, or decoding would silently produce the wrong type.
    """

    def decorate(cls: M) -> M:
        tag = kind or _snake(cls.__name__)
        existing = _REGISTRY.get(tag)
        if existing is not None and (existing.__module__, existing.__qualname__) != (
            cls.__module__,
            cls.__qualname__,
        ):
            raise TypeError(
                f"message kind {tag!r} is already registered by {existing.__module__}."
                f"{existing.__qualname__}; pass message(kind=...) to choose another tag"
            )
        # Message's __repr__, __eq__ and __hash__, shared, do what attrs would have compiled.
        frozen = attrs.frozen(kw_only=True, repr=False, eq=False)(cls)
        frozen.kind = tag
        _REGISTRY[tag] = frozen
        return frozen

    return decorate


def message_class(kind: str) -> type[Message]:
    """Return the class registered under ``kind`` or raise ``KeyError`` naming the known kinds."""
    try:
        return _REGISTRY[kind]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "(none)"
        raise KeyError(f"unknown message kind {kind!r}; registered kinds: {known}") from None


def find_message_class(kind: str) -> type[Message] | None:
    """The class registered under ``kind``, or ``None``: for readers that skip unknown kinds
    (cheaper than catching :func:`message_class`'s error, which lists every known kind)."""
    return _REGISTRY.get(kind)


def registered_kinds() -> dict[str, type[Message]]:
    return dict(_REGISTRY)


def _snake(name: str) -> str:
    out: list[str] = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


@attrs.frozen(order=True, cache_hash=True)
class Address:
    """Where a message goes: ``(kind, key)``, e.g. ``("agent", "alice")``.

    Its hash is computed once: every envelope routed looks its recipient's mailbox up by
    address, and an actor sends from and to the same few address objects."""

    kind: str
    key: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}" if self.key else self.kind


_envelope_ids = itertools.count(1)


@attrs.frozen(kw_only=True)
class Envelope:
    """A payload in transit.

    ``id`` names this message in transit: unique within the process, taken from a counter
    when the envelope is created (one ``next()``, O(1)), carried through the codec, and kept
    by :meth:`redirected`, since a redirect re-addresses the same message. The event log
    writes an envelope once and refers to it by ``id`` afterwards. It is left out of equality
    and hashing: two envelopes with the same contents are equal whoever created them.
    An envelope decoded from a log written before ids existed gets a fresh one.

    ``timestamp`` is ``trio.current_time()`` at send, so it follows test clocks.
    ``correlation_id`` ties a reply to its request; plain tells carry ``None``.
    """

    id: int = attrs.field(factory=_envelope_ids.__next__, eq=False)
    sender: Address | None
    recipient: Address
    payload: Message
    correlation_id: int | None = None
    timestamp: float = 0.0
    is_reply: bool = False

    def redirected(self, to: Address) -> Envelope:
        """The same envelope (same ``id``) addressed to ``to``."""
        return attrs.evolve(self, recipient=to)
