"""Typed messages, addresses and the envelope that carries them.

Every payload is a frozen, keyword-only attrs class registered under a ``kind`` tag.
Inside the process instances travel by reference; the codec turns them into JSON only at
boundaries (event log, websocket, process hops), so registering costs nothing on the hot path.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import ClassVar, TypeVar, dataclass_transform

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
        frozen = attrs.frozen(kw_only=True)(cls)
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
