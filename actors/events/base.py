"""The base class of every event meant for people.

Kernel events (deliveries, holds, supervision) describe the machinery; a
:class:`DomainEvent` describes the run as a person follows it. Outputs that show a run to
people (stream-json, progress, replay) select by this class, so an event defined in any
module appears there as soon as it subclasses it.
"""

from __future__ import annotations

from runtime import Event, message

__all__ = ["DomainEvent"]


@message()
class DomainEvent(Event):
    """An event in the run's story: answers, votes, rounds, LLM calls, the end."""
