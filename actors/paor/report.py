"""What a PAOR round hands back: how it ended, and its summary, concise or verbose."""

from __future__ import annotations

import enum

import attrs

from conclave.actors.paor.observe import Observation, describe_observations
from conclave.actors.paor.plan import Plan
from conclave.actors.paor.reflect import Reflection

__all__ = ["PaorEnd", "PaorOutcome"]


class PaorEnd(enum.Enum):
    GOAL_ACHIEVED = "goal_achieved"
    """Reflect said the goal is achieved: the round's answer is its summary."""
    MAX_ITERATIONS = "max_iterations"
    """``paor.max_iterations`` ran out: the answer is a progress report (the run exits 5)."""
    FAILED = "failed"
    """An unrecoverable error: the model could not be reached, or its tries ran out."""
    NEEDS_USER = "needs_user"
    """Reflect asked for the user and nobody could be asked (questions are off)."""


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

    def summary(self, *, verbose: bool = False) -> str:
        """Concise: what was done and what is left (and, short of the goal, the last
        observations). ``verbose`` adds every plan, observation and reflection."""
        last = self.reflections[-1] if self.reflections else None
        head = {
            PaorEnd.GOAL_ACHIEVED: "Done",
            PaorEnd.MAX_ITERATIONS: f"Stopped after {self.iterations} iterations (the limit)",
            PaorEnd.FAILED: "Failed",
            PaorEnd.NEEDS_USER: "Stopped: needs the user",
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
