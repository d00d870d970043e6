"""Observe: what the Act phase's tool calls did, recorded as they ran (no model call).

:class:`RecordingTools` wraps the agent's executor: every call still goes through it
(permissions, sandboxes and plan-mode rules apply unchanged) and each result is kept as an
:class:`Observation`. Reflect is shown the observations of the iteration.
"""

from __future__ import annotations

import attrs
import trio

from conclave.actors.llm.protocol import ToolCall, ToolSchema
from conclave.actors.tools.protocol import ToolExecutor, ToolResult

__all__ = ["Observation", "RecordingTools", "describe_observations"]

_SHOWN = 2000
"""Characters of a call's output shown to Reflect; the whole output is in the transcript."""


@attrs.frozen(kw_only=True)
class Observation:
    tool: str
    arguments: str
    output: str
    duration: float
    success: bool
    error: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two calls the same for stuck detection: tool, arguments, output."""
        return self.tool, self.arguments, self.output


class RecordingTools:
    """The agent's tools, each result recorded; :meth:`take` hands the iteration's over."""

    def __init__(self, inner: ToolExecutor) -> None:
        self._inner = inner
        self._seen: list[Observation] = []

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._inner.schemas()

    def withheld(self) -> tuple[ToolSchema, ...]:
        return self._inner.withheld()

    async def execute(self, call: ToolCall) -> ToolResult:
        started = trio.current_time()
        result = await self._inner.execute(call)
        self._seen.append(
            Observation(
                tool=call.name,
                arguments=call.arguments,
                output=result.output,
                duration=trio.current_time() - started,
                success=result.ok,
                error=result.error,
            )
        )
        return result

    def observe(self, observation: Observation) -> None:
        """Record what a sub-agent did (its report) among the iteration's observations."""
        self._seen.append(observation)

    def take(self) -> tuple[Observation, ...]:
        """The observations since the last take."""
        seen, self._seen = tuple(self._seen), []
        return seen


def describe_observations(
    observations: tuple[Observation, ...], *, heading: str = "Observations of this iteration"
) -> str:
    """The observations as Reflect reads them."""
    if not observations:
        return f"{heading}: no tool was called."
    lines = [f"{heading} (tool, input, duration, outcome):"]
    for n, seen in enumerate(observations, 1):
        outcome = seen.output if seen.success else f"ERROR: {seen.error or 'failed'}"
        if len(outcome) > _SHOWN:
            outcome = outcome[:_SHOWN] + f"... ({len(outcome) - _SHOWN} more characters)"
        lines.append(f"{n}. {seen.tool} {seen.arguments} ({seen.duration:.2f}s) -> {outcome}")
    return "\n".join(lines)
