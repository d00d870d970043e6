"""The base class of every event meant for people.

Kernel events (deliveries, holds, supervision) describe the machinery; a
:class:`DomainEvent` describes the run as a person follows it. Outputs that show a run to
people (stream-json, progress, replay, the hub's default subscription) select by this
class, so an event defined in any module appears there as soon as it subclasses it.
"""

from __future__ import annotations

from conclave.runtime import Event, message

__all__ = ["DomainEvent"]


@message()
class DomainEvent(Event):
    """An event in the run's story: answers, votes, rounds, LLM calls, the end."""

    # ``ephemeral`` (from :class:`runtime.Event`): ``True`` for events only live watchers
    # need (token deltas). Subscribers get them, the event log never writes them, and
    # nothing derived from the log (:class:`RunView`) may depend on them.
