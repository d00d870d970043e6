"""Domain events: what people watch (stream-json, the REPL, the websocket, replay), and the
hub that lets any number of them watch a run live.

:mod:`actors.events.view` (``RunView``) is imported from its module: it reads the events of
every other part of the domain, which themselves import this package.
"""

from conclave.actors.events.base import DomainEvent
from conclave.actors.events.hub import (
    DEFAULT_BUFFER,
    DropCause,
    EventHub,
    HubStatistics,
    SubscriberDropped,
    Subscription,
    SyncSubscription,
)
from conclave.actors.events.loop import (
    LlmRetry,
    LlmTryFailed,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = [
    "DEFAULT_BUFFER",
    "DomainEvent",
    "DropCause",
    "EventHub",
    "HubStatistics",
    "LlmRetry",
    "LlmTryFailed",
    "SubscriberDropped",
    "Subscription",
    "SyncSubscription",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
]
