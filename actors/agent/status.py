"""What an agent is doing, as it records it (``agent_status_changed``) and as views show it.

A ``StrEnum``: members serialize as, and compare equal to, the strings event logs have
always carried, so old logs decode. A leaf module: the agent's memory, its events and the
run's view all use it.
"""

from __future__ import annotations

import enum

__all__ = ["STOPPED", "AgentStatus"]


class AgentStatus(enum.StrEnum):
    IDLE = "idle"
    WORKING = "working"
    RESTARTING = "restarting"
    ANSWERED = "answered"
    """Answered; waiting for "you may vote now"."""
    ANSWERED_NO_VOTING = "answered, no voting"
    """Answered in a run without voting: done unless new answers call for a refinement."""
    VOTED = "voted"
    STOPPED = "stopped"
    PRESENTING = "presenting"
    EXCLUDED = "excluded"
    PRESENTED = "presented"
    """Only a view says it (:class:`~actors.events.view.RunView`): the agent presented and
    the final answer is out. The agent records no status for having finished."""


STOPPED = frozenset({AgentStatus.STOPPED, AgentStatus.EXCLUDED})
"""Statuses after which an agent's clock stops."""
