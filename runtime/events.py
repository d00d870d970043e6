"""Typed events: what the kernel records about every envelope and every actor lifecycle step.

Events are registered messages, so the one converter serializes them with their ``kind`` tag.
Domain layers add their own events by subclassing :class:`Event` with ``@message()``.
"""

from __future__ import annotations

import enum

from runtime.messages import Address, Envelope, Message, message

__all__ = [
    "ChildExited",
    "ChildStarted",
    "ChildStopped",
    "DeadLetter",
    "DeadLetterCause",
    "Delivered",
    "Event",
    "Held",
    "LogOpened",
    "Redirected",
    "Released",
    "SupervisorEscalated",
]


@message()
class Event(Message):
    """Base of every event; ``at`` is ``trio.current_time()`` when it happened."""

    at: float


class DeadLetterCause(enum.Enum):
    DROPPED = "dropped"
    """A routing rule dropped it."""
    CRASHED = "crashed"
    """Its handler raised; dead-lettered so a poison message cannot crash-loop."""
    UNDELIVERABLE = "undeliverable"
    """Nobody will ever read it: unknown recipient, its actor stopped for good, or its
    handler was cancelled before it finished."""


@message()
class LogOpened(Event):
    wall_time: float
    pid: int


@message()
class Delivered(Event):
    envelope: Envelope


@message()
class Held(Event):
    envelope: Envelope
    reason: str


@message()
class Released(Event):
    envelope: Envelope


@message()
class Redirected(Event):
    envelope: Envelope
    to: Address


@message()
class DeadLetter(Event):
    envelope: Envelope
    cause: DeadLetterCause
    reason: str


@message()
class ChildStarted(Event):
    supervisor: str
    child: str
    incarnation: int


@message()
class ChildExited(Event):
    """A child stopped on its own: ``error`` is ``None`` for a normal exit."""

    supervisor: str
    child: str
    error: str | None
    action: str
    """What the supervisor did about it: ``restart``, ``retire`` or ``escalate``."""


@message()
class ChildStopped(Event):
    """The supervisor stopped a child: ``how`` is ``graceful`` or ``killed`` (timeout)."""

    supervisor: str
    child: str
    how: str


@message()
class SupervisorEscalated(Event):
    supervisor: str
    error: str
