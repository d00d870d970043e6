"""The tools a coordination round offers: the workflow tools, then the agent's own tools.

Workflow calls never reach :meth:`RoundTools.execute`: the round's ``WorkflowTerminal`` makes
one final, or a violation. The agent's own tools run through their executor, and each call
is recorded as ``ToolCallStarted``/``ToolCallFinished`` for people watching.
"""

from __future__ import annotations

import trio

from conclave.actors.events.loop import ToolCallFinished, ToolCallStarted
from conclave.actors.llm.protocol import ToolCall, ToolSchema
from conclave.actors.tools.protocol import ToolExecutor, ToolResult
from conclave.runtime import ActorContext

__all__ = ["RoundTools"]


class RoundTools:
    def __init__(
        self,
        workflow: tuple[ToolSchema, ...],
        tools: ToolExecutor,
        *,
        context: ActorContext,
        agent: str,
    ) -> None:
        self._workflow = workflow
        self._tools = tools
        self._context = context
        self._agent = agent

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._workflow + self._tools.schemas()

    def withheld(self) -> tuple[ToolSchema, ...]:
        return self._tools.withheld()

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one of the agent's tools; a tool that raises is an error result."""
        started = trio.current_time()
        self._context.record(
            ToolCallStarted(
                at=started,
                agent=self._agent,
                tool=call.name,
                call_id=call.id,
                arguments=call.arguments,
            )
        )
        try:
            result = await self._tools.execute(call)
        except Exception as exc:
            result = ToolResult(
                ok=False, error=f"the tool {call.name} failed: {type(exc).__name__}: {exc}"
            )
        now = trio.current_time()
        self._context.record(
            ToolCallFinished(
                at=now,
                agent=self._agent,
                tool=call.name,
                call_id=call.id,
                arguments=call.arguments,
                output=result.for_model(),
                duration=now - started,
                ok=result.ok,
                error=result.error,
                refused=result.refused,
            )
        )
        return result
