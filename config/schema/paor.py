"""An agent's ``loop`` and ``paor`` settings: how its answer rounds work.

``free`` is the tool loop every round has always been (the model calls tools until it ends
the round). ``paor`` runs the Plan-Act-Observe-Reflect machine of :mod:`actors.paor`: the
model submits a plan, acts on it, its tool results are observed, it reflects, and repeats
until the goal is reached, it needs the user, or ``max_iterations`` runs out.
"""

from __future__ import annotations

import enum

import attrs

from conclave.config.schema.checks import fraction, seconds, whole

__all__ = [
    "MAX_PAOR_DEPTH",
    "MAX_PAOR_ITERATIONS",
    "MAX_PAOR_SECONDS",
    "MAX_PAOR_TOKENS",
    "LoopKind",
    "PaorConfig",
    "SubAgentKind",
]

MAX_PAOR_ITERATIONS = 1000
"""Plan-act-observe-reflect iterations one round may take at most."""
MAX_PAOR_DEPTH = 5
"""How deep sub-tasks may nest at most."""
MAX_PAOR_TOKENS = 100_000_000
"""The largest token budget a PAOR agent may be given."""
MAX_PAOR_SECONDS = 7 * 24 * 3600.0
"""The longest wall-time budget a PAOR agent may be given (a week)."""


class LoopKind(enum.Enum):
    """How an agent's answer rounds run."""

    FREE = "free"
    """One tool loop: the model calls tools until it ends the round."""
    PAOR = "paor"
    """Plan, act, observe, reflect, in iterations (docs/paor.md)."""


class SubAgentKind(enum.Enum):
    """Who carries out a delegated step of a PAOR plan."""

    EXPLORE = "explore"
    """Read-only tools, its own loop: understands code and returns a summary."""
    WORKER = "worker"
    """The agent's own tools, its own loop: carries out a sub-task (and may delegate further,
    within ``paor.max_depth``)."""


@attrs.frozen(kw_only=True)
class PaorConfig:
    max_iterations: int = attrs.field(default=15, validator=whole(1, MAX_PAOR_ITERATIONS))
    """Plan-act-observe-reflect iterations before the round stops and reports its progress
    (the run then exits 5)."""
    max_depth: int = attrs.field(default=2, validator=whole(0, MAX_PAOR_DEPTH))
    """How deep sub-tasks may nest (0: the plan's steps are not split further): a plan may
    delegate steps to sub-agents, theirs to theirs, down to this depth."""
    max_tokens: int | None = attrs.field(
        default=None, validator=whole(1, MAX_PAOR_TOKENS, optional=True)
    )
    """Tokens (input plus output) the agent's round may spend, its sub-agents' included;
    ``None``: no limit. When they run out the round stops and reports its progress."""
    max_seconds: float | None = attrs.field(
        default=None, validator=seconds(high=MAX_PAOR_SECONDS, optional=True)
    )
    """Wall time the agent's round may take, its sub-agents' included; ``None``: no limit."""
    subagent_share: float = attrs.field(default=0.5, validator=fraction)
    """The part of what is left of the budgets that a plan's sub-agents get, split evenly
    among its delegated steps (the rest stays with the agent)."""
