"""Routing rules: small pure objects that decide what happens to an envelope.

A rule answers ``decide(envelope, facts)`` with :class:`Deliver`, :class:`Drop`,
:class:`Hold` or :class:`Redirect`. ``facts`` is a read-only mapping the router keeps from
the messages it sees (through :class:`FactObserver`s) and from explicit updates. Mode toggles
are rules, so "injection off" or "defer voting" are a line of configuration, not ``if``s in
actors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from conclave.runtime.messages import Address, Envelope

__all__ = [
    "DELIVER",
    "Decision",
    "Deliver",
    "Drop",
    "FactObserver",
    "Facts",
    "Hold",
    "Redirect",
    "RoutingRule",
    "inspects",
    "rule_name",
]

Facts = Mapping[str, Any]


@attrs.frozen
class Deliver:
    pass


DELIVER = Deliver()


@attrs.frozen
class Drop:
    reason: str


@attrs.frozen
class Hold:
    """Park the envelope until ``until(facts)`` is true.

    ``watch`` names the fact keys whose change can make ``until`` true; the router re-checks
    the hold only when one of them changes, so thousands of held envelopes cost nothing
    while unrelated facts move. Empty means "re-check on any change".
    """

    until: Callable[[Facts], bool]
    reason: str = "held"
    watch: frozenset[str] = frozenset()


@attrs.frozen
class Redirect:
    to: Address


Decision = Deliver | Drop | Hold | Redirect


class RoutingRule(Protocol):
    """Decides an envelope's fate.

    A rule may declare ``payloads``, a tuple of the message classes it can decide anything
    but :data:`DELIVER` for; the router then never consults it for other messages. Most
    traffic (requests, replies, an agent's notes to itself) concerns no rule, so a run's
    hot path skips them all. Without ``payloads`` a rule sees every envelope.
    """

    def decide(self, envelope: Envelope, facts: Facts) -> Decision: ...


class FactObserver(Protocol):
    """Turns routed envelopes into fact updates (``None`` when the envelope changes nothing).

    Like a rule, an observer may declare ``payloads`` to be shown only those messages.
    """

    def observe(self, envelope: Envelope, facts: Facts) -> Mapping[str, Any] | None: ...


def inspects(rule_or_observer: object, payload_type: type) -> bool:
    """Whether the router must show ``payload_type`` messages to this rule or observer."""
    payloads = getattr(rule_or_observer, "payloads", None)
    return payloads is None or issubclass(payload_type, payloads)


def rule_name(rule: object) -> str:
    name = getattr(rule, "name", None)
    return name if isinstance(name, str) else type(rule).__name__
