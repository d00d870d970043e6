"""An agent's ``loop`` and ``paor`` settings: how its answer rounds work.

``free`` is the tool loop every round has always been (the model calls tools until it ends
the round). ``paor`` runs the Plan-Act-Observe-Reflect machine of :mod:`actors.paor`: the
model submits a plan, acts on it, its tool results are observed, it reflects, and repeats
until the goal is reached, it needs the user, or ``max_iterations`` runs out.
"""

from __future__ import annotations

import enum

import attrs

from conclave.config.schema.checks import whole

__all__ = ["MAX_PAOR_DEPTH", "MAX_PAOR_ITERATIONS", "LoopKind", "PaorConfig"]

MAX_PAOR_ITERATIONS = 1000
"""Plan-act-observe-reflect iterations one round may take at most."""
MAX_PAOR_DEPTH = 5
"""How deep sub-tasks may nest at most."""


class LoopKind(enum.Enum):
    """How an agent's answer rounds run."""

    FREE = "free"
    """One tool loop: the model calls tools until it ends the round."""
    PAOR = "paor"
    """Plan, act, observe, reflect, in iterations (docs/paor.md)."""


@attrs.frozen(kw_only=True)
class PaorConfig:
    max_iterations: int = attrs.field(default=15, validator=whole(1, MAX_PAOR_ITERATIONS))
    """Plan-act-observe-reflect iterations before the round stops and reports its progress
    (the run then exits 5)."""
    max_depth: int = attrs.field(default=2, validator=whole(0, MAX_PAOR_DEPTH))
    """How deep sub-tasks may nest (0: the plan's steps are not split further)."""
