"""Domain events: what people watch (stream-json, the REPL, the websocket, replay)."""

from actors.events.base import DomainEvent

__all__ = ["DomainEvent"]
