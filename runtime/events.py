"""Typed events: what the kernel records about every envelope and every actor lifecycle step.

Events are registered messages, so the one converter serializes them with their ``kind`` tag.
Domain layers add their own events by subclassing :class:`Event` with ``@message()``.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from conclave.runtime.messages import Address, Envelope, Message, message

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
    "TapFailed",
]


@message()
class Event(Message):
    """Base of every event; ``at`` is ``trio.current_time()`` when it happened."""

    at: float

    ephemeral: ClassVar[bool] = False
    """Taps hear an ephemeral event, the event log never writes it (token deltas: one
    unbuffered write per token per agent would be a syscall storm)."""


class DeadLetterCause(enum.Enum):
    DROPPED = "dropped"
    """A routing rule dropped it."""
    CRASHED = "crashed"
    """Its handler raised; dead-lettered so a poison message cannot crash-loop."""
    UNDELIVERABLE = "undeliverable"
    """Nobody will ever read it: unknown recipient, its actor stopped for good, its handler
    was cancelled before it finished, or (a reply) nobody waits for it any more."""


class SupervisorAction(enum.StrEnum):
    """What a supervisor did about a child that exited on its own."""

    RESTART = "restart"
    RETIRE = "retire"
    """Not restarted (transient after a normal exit, temporary, or a failed start of a
    temporary child): its address is free again."""
    ESCALATE = "escalate"
    """Too many restarts in the period, or a failed start: the supervisor fails upwards."""


class HowStopped(enum.StrEnum):
    """How a child the supervisor stopped ended."""

    GRACEFUL = "graceful"
    """It finished within its shutdown timeout."""
    KILLED = "killed"
    """Cancelled after the timeout, or abandoned still running after its kill timeout too."""
    CRASHED = "crashed"
    """It raised while stopping."""


EVENT_LOG_FORMAT = 3
"""The event log's format: 3 writes a batch of releases in one line and no delivery of an
envelope an actor sent itself (:mod:`runtime.eventlog`); 2 writes long texts once
(:mod:`runtime.eventlog_texts`); 1 (a log whose ``log_opened`` names none) wrote every text
in full. This version reads all three."""


@message()
class LogOpened(Event):
    wall_time: float
    pid: int
    format: int = 1
    """The format the log is written in (:data:`EVENT_LOG_FORMAT`); a reader refuses a log
    newer than it knows rather than misread it. 1 in a log written before formats were
    numbered."""


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
    """A child stopped on its own: ``error`` is ``None`` for a normal exit.

    An actor whose ``started()`` raised exits with ``error`` ``"StartFailed: <address>
    crashed in started() ..."``; it is never restarted (``retire`` or ``escalate``).
    """

    supervisor: str
    child: str
    error: str | None
    action: SupervisorAction


@message()
class ChildStopped(Event):
    """The supervisor stopped a child; ``error`` says what it raised if it ``crashed``."""

    supervisor: str
    child: str
    how: HowStopped
    error: str | None = None


@message()
class SupervisorEscalated(Event):
    supervisor: str
    error: str


@message()
class TapFailed(Event):
    """A tap raised while recording an event; it was removed and hears nothing more."""

    tap: str
    error: str
