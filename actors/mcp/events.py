"""What a run tells about its MCP servers: each one up (with the tools it offers), or down
and why."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.runtime import message

__all__ = ["McpServerFailed", "McpServerReady"]


@message()
class McpServerReady(DomainEvent):
    """A server is up and listed its tools: at the run's start, or again after a restart."""

    server: str
    """Its name; ``agent/name`` for a server of one agent's."""
    tools: tuple[str, ...]
    """The tool names offered to agents (``mcp__<name>__<tool>``)."""
    incarnation: int
    """1 for the first start, more after restarts."""


@message()
class McpServerFailed(DomainEvent):
    """A server could not start (its tools are not offered), or was restarted too often
    (its tools answer with this reason from now on)."""

    server: str
    reason: str
    stderr: str
    """The last of what it wrote to stderr, redacted."""
    gave_up: bool
    """``False``: it never started. ``True``: it ran, crashed and was restarted too often."""
