"""What a PAOR agent may spend, and what its sub-agents spent.

An agent's round has a budget of tokens and of wall time (``paor.max_tokens``,
``paor.max_seconds``; ``None``: no limit). When its plan delegates steps, it passes each
sub-agent a share of what is left (:func:`share`), and each sub-agent's report says what it
and its own sub-agents used, so the round's result reports usage per sub-agent.
"""

from __future__ import annotations

from typing import Protocol

import attrs
import orjson

from conclave.actors.paor.observe import Observation
from conclave.actors.paor.plan import Plan, SubAgentKind
from conclave.actors.paor.report import PaorEnd

__all__ = ["Budget", "Delegate", "SubAgentReport", "SubAgentUsage", "share"]


@attrs.frozen(kw_only=True)
class Budget:
    tokens: int | None = None
    """Input plus output tokens; ``None``: no limit."""
    seconds: float | None = None
    """Wall time; ``None``: no limit."""


def share(left: Budget, fraction: float, parts: int) -> Budget:
    """Each of ``parts`` sub-agents' share of ``left``: ``fraction`` of it, split evenly.
    A share is never nothing (one token, a millisecond): a sub-agent with nothing left
    stops at its first check and says so."""
    tokens = None if left.tokens is None else max(1, int(left.tokens * fraction / parts))
    seconds = None if left.seconds is None else max(0.001, left.seconds * fraction / parts)
    return Budget(tokens=tokens, seconds=seconds)


@attrs.frozen(kw_only=True)
class SubAgentUsage:
    """What one sub-agent used (its own sub-agents have rows of their own)."""

    agent: str
    """Its path: the parent's name, then ``/iteration.step`` for each level."""
    agent_kind: SubAgentKind
    step: str
    end: PaorEnd | None
    """How its round ended; ``None``: it crashed and was not brought back."""
    tokens: int
    """Its own calls' input plus output tokens."""
    seconds: float
    llm_calls: int
    budget: Budget
    """The share it was given."""


@attrs.frozen(kw_only=True)
class SubAgentReport:
    """A delegated step's result, as its parent observes it."""

    step: str
    agent_kind: SubAgentKind
    task: str
    agent: str
    end: PaorEnd | None
    """``None``: the sub-agent crashed, was restarted, and crashed again."""
    summary: str
    """Its round's concise summary, or what happened to it."""
    seconds: float
    crashes: int = 0
    """Crashes it was restarted after."""
    usage: tuple[SubAgentUsage, ...] = ()
    """Its own row first, then its sub-agents' (depth first)."""

    @property
    def tokens(self) -> int:
        """Tokens it and its sub-agents used: what its parent's budget is charged."""
        return sum(row.tokens for row in self.usage)

    def observation(self) -> Observation:
        """The report as an observation of the parent's iteration."""
        ok = self.end is PaorEnd.GOAL_ACHIEVED
        return Observation(
            tool=f"sub-agent:{self.agent_kind.value}",
            arguments=orjson.dumps({"step": self.step, "task": self.task}).decode(),
            output=f"{self.summary}\n({self.tokens} tokens, {self.seconds:.2f}s)",
            duration=self.seconds,
            success=ok,
            error=None if ok else self.summary.splitlines()[0] if self.summary else "failed",
        )


class Delegate(Protocol):
    """Runs a plan's delegated steps as sub-agents, in dependency order, each with its
    share of ``left``; their reports in the plan's order."""

    async def __call__(
        self, plan: Plan, iteration: int, left: Budget, fraction: float
    ) -> tuple[SubAgentReport, ...]: ...
