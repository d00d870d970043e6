"""What a PAOR round hands back: how it ended, and its summary, concise or verbose."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from conclave.actors.paor.observe import Observation, describe_observations
from conclave.actors.paor.plan import Plan
from conclave.actors.paor.reflect import Reflection
from conclave.config.wording import plural

if TYPE_CHECKING:
    from conclave.actors.paor.budget import SubAgentReport

__all__ = ["PaorEnd", "PaorOutcome", "describe_usage"]


class PaorEnd(enum.Enum):
    GOAL_ACHIEVED = "goal_achieved"
    """Reflect said the goal is achieved: the round's answer is its summary."""
    MAX_ITERATIONS = "max_iterations"
    """``paor.max_iterations`` ran out: the answer is a progress report (the run exits 5)."""
    FAILED = "failed"
    """An unrecoverable error: the model could not be reached, or its tries ran out."""
    NEEDS_USER = "needs_user"
    """Reflect asked for the user and nobody could be asked (questions are off)."""
    BUDGET_SPENT = "budget_spent"
    """Its tokens (``paor.max_tokens``) or wall time (``paor.max_seconds``), or the share
    its parent passed down, ran out: the answer is a progress report (the run exits 5)."""


@attrs.frozen(kw_only=True)
class PaorOutcome:
    end: PaorEnd
    iterations: int
    plans: tuple[Plan, ...] = ()
    reflections: tuple[Reflection, ...] = ()
    observations: tuple[tuple[Observation, ...], ...] = ()
    """Each iteration's observations, in order."""
    error: str = ""
    """Why it failed, or the question nobody could answer."""
    subagents: tuple[SubAgentReport, ...] = ()
    """What its delegated steps' sub-agents did and used, in the order they ran."""

    def summary(self, *, verbose: bool = False) -> str:
        """Concise: what was done and what is left (and, short of the goal, the last
        observations). ``verbose`` adds every plan, observation and reflection."""
        last = self.reflections[-1] if self.reflections else None
        done = plural(self.iterations, "iteration")
        head = {
            PaorEnd.GOAL_ACHIEVED: "Done",
            PaorEnd.MAX_ITERATIONS: f"Stopped after {done} (the limit)",
            PaorEnd.FAILED: "Failed",
            PaorEnd.NEEDS_USER: "Stopped: needs the user",
            PaorEnd.BUDGET_SPENT: "Stopped: its budget ran out",
        }[self.end]
        lines = [f"{head}: {last.progress}" if last is not None else f"{head}."]
        if self.end is not PaorEnd.GOAL_ACHIEVED:
            if last is not None and last.next:
                lines.append(f"Left to do: {last.next}")
            if self.error:
                lines.append(f"Why: {self.error}")
            if self.observations and self.observations[-1]:
                last_seen = self.observations[-1]
                lines.append(describe_observations(last_seen, heading="The last observations"))
        lines.extend(describe_usage(self.subagents, every=verbose))
        if verbose:
            lines.append("")
            lines.extend(self._every_step())
        return "\n".join(lines)

    def _every_step(self) -> list[str]:
        lines: list[str] = []
        for n in range(self.iterations):
            lines.append(f"Iteration {n + 1}")
            if n < len(self.plans):
                lines.append(self.plans[n].describe())
            if n < len(self.observations):
                lines.append(describe_observations(self.observations[n]))
            if n < len(self.reflections):
                r = self.reflections[n]
                lines.append(f"Reflection: {r.progress}" + (f" Next: {r.next}" if r.next else ""))
        return lines


def describe_usage(reports: Sequence[SubAgentReport], *, every: bool) -> list[str]:
    """Lines on what the sub-agents used: a total, and with ``every`` a row for each (its
    own sub-agents' rows included)."""
    rows = [row for report in reports for row in report.usage]
    if not rows:
        return []
    done = sum(1 for row in rows if row.end is PaorEnd.GOAL_ACHIEVED)
    crashed = sum(1 for report in reports if report.end is None)
    lost = f", {crashed} crashed" if crashed else ""
    lines = [
        f"Sub-agents: {len(rows)} ({done} done{lost}), {sum(r.tokens for r in rows)} tokens, "
        f"{sum(r.llm_calls for r in rows)} LLM calls"
    ]
    if every:
        for row in rows:
            end = row.end.value if row.end is not None else "crashed"
            lines.append(
                f"- {row.agent} ({row.agent_kind.value}, step {row.step}): {end}, {row.tokens} "
                f"tokens, {row.llm_calls} calls, {row.seconds:.2f}s"
            )
    return lines
