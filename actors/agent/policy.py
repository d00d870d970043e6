"""Which in-flight policy a round follows: what new answers do to a round already working.

- ``inject`` (rounds with tools): the answers enter the round's transcript as one message at
  the next step boundary; nothing restarts, no work is discarded. A round with tools takes
  several steps, and its tool work (files read, commands run) is what a restart would lose.
- ``finish`` (rounds without tools, the configured default): the round's one call finishes;
  if answers arrived meanwhile its result is discarded and the round runs once more.
- ``cancel`` (as configured, with or without tools): the call is cancelled at once and the
  round restarts once per burst of updates.

``inject`` needs a step boundary, which a round without tools (one call) does not have, so
there it is ``finish``. With tools, ``finish`` would throw the finished tool work away, so
there it is ``inject``: the configured default (``finish``) means "do not cut the work short",
which ``inject`` keeps better. ``cancel`` is an explicit choice to restart, kept everywhere.

A PAOR round (:mod:`actors.agent.paor_round`) takes many steps (plan, act, reflect, each an
LLM call) even without tools of its own, and a restart would throw its iterations away: it
follows ``inject`` too.
"""

from __future__ import annotations

from conclave.actors.llm.protocol import ToolSchema
from conclave.config.schema import InFlightPolicy, LoopKind

__all__ = ["round_policy", "runs_paor"]


def runs_paor(loop: LoopKind, workflow: tuple[ToolSchema, ...]) -> bool:
    """Whether a round with these workflow tools runs PAOR: the agent's loop is ``paor``
    and the round may answer but not vote."""
    names = {t.name for t in workflow}
    return loop is LoopKind.PAOR and "new_answer" in names and "vote" not in names


def round_policy(
    configured: InFlightPolicy, *, has_tools: bool, paor: bool = False
) -> InFlightPolicy:
    """The policy a round follows, given the configured one, whether it offers tools
    besides the workflow tools, and whether it runs PAOR."""
    if configured is InFlightPolicy.CANCEL:
        return configured
    return InFlightPolicy.INJECT if has_tools or paor else InFlightPolicy.FINISH
