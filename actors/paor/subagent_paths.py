"""A sub-agent's path (``worker/1.2``) and the run's agent it belongs to.

Apart from :mod:`actors.paor.subagent_events` so that what counts a sub-agent's calls as
its agent's (the run's usage tap) does not load PAOR's events before a run's first
request (issue 24: start-up).
"""

from __future__ import annotations

__all__ = ["SEPARATOR", "agent_of", "is_subagent"]

SEPARATOR = "/"
"""Between the levels of a sub-agent's path; never in an agent id (config refuses it)."""


def is_subagent(agent: str) -> bool:
    """Whether an event's ``agent`` names a sub-agent (its path) rather than a run's agent:
    a sub-agent's tool calls are recorded under its path."""
    return SEPARATOR in agent


def agent_of(agent: str) -> str:
    """The run's agent a sub-agent's path starts with (an agent's own name unchanged)."""
    return agent.split(SEPARATOR, 1)[0]
