"""Registers every message and event kind the domain defines.

Kinds register when their module is imported. A reader of logs or of the wire (replay, the
websocket) imports this module so that every kind a run may have written decodes to its
class, whichever parts of the domain it otherwise uses.
"""

from __future__ import annotations

import actors.agent.events
import actors.agent.protocol
import actors.coordination.events
import actors.coordination.protocol
import actors.events.base
import actors.events.hub
import actors.events.loop
import actors.mcp.events
import actors.run.events
import actors.workspace.events
import actors.workspace.tracker

__all__ = ["DOMAIN_MODULES"]

DOMAIN_MODULES = (
    actors.agent.events,
    actors.agent.protocol,
    actors.coordination.events,
    actors.coordination.protocol,
    actors.events.base,
    actors.events.hub,
    actors.events.loop,
    actors.mcp.events,
    actors.run.events,
    actors.workspace.events,
    actors.workspace.tracker,
)
