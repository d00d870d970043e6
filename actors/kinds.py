"""Registers every message and event kind the domain defines.

Kinds register when their module is imported. A reader of logs or of the wire (replay, the
websocket) imports this module so that every kind a run may have written decodes to its
class, whichever parts of the domain it otherwise uses.
"""

from __future__ import annotations

import conclave.actors.agent.events
import conclave.actors.agent.protocol
import conclave.actors.coordination.events
import conclave.actors.coordination.protocol
import conclave.actors.events.base
import conclave.actors.events.hub
import conclave.actors.events.loop
import conclave.actors.human.events
import conclave.actors.mcp.events
import conclave.actors.paor.events
import conclave.actors.paor.subagent_events
import conclave.actors.planning.progress
import conclave.actors.run.events
import conclave.actors.session.entries
import conclave.actors.workspace.events
import conclave.actors.workspace.tracker

__all__ = ["DOMAIN_MODULES"]

DOMAIN_MODULES = (
    conclave.actors.agent.events,
    conclave.actors.agent.protocol,
    conclave.actors.coordination.events,
    conclave.actors.coordination.protocol,
    conclave.actors.events.base,
    conclave.actors.events.hub,
    conclave.actors.events.loop,
    conclave.actors.human.events,
    conclave.actors.mcp.events,
    conclave.actors.planning.progress,
    conclave.actors.paor.events,
    conclave.actors.paor.subagent_events,
    conclave.actors.run.events,
    conclave.actors.session.entries,
    conclave.actors.workspace.events,
    conclave.actors.workspace.tracker,
)
