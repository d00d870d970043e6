"""A backend that plays replies in order, tools that answer from a table, and the replies
a PAOR round is made of."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import trio

from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    ToolCall,
    ToolSchema,
)
from conclave.actors.tools.protocol import ToolResult
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    LoopKind,
    OrchestratorConfig,
    ScriptedBackendConfig,
)

Reply = ChatMessage | Exception

TASK = "Find all usages of function old_total and rename it to compute_total"
"""The mission's scenario, on the fixture repository of ``conftest.repo``."""


class PlayedBackend:
    """Plays its replies in order; keeps every request."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self._replies = list(replies)
        self.requests: list[CompletionRequest] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        await trio.sleep(0.1)
        reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion(message=reply)


class TableTools:
    """``search`` (read-only) and ``edit``; each call's output is ``outputs[name]``."""

    def __init__(self, outputs: dict[str, str] | None = None) -> None:
        self.outputs = outputs or {}
        self.calls: list[ToolCall] = []

    def schemas(self) -> tuple[ToolSchema, ...]:
        return (
            ToolSchema(name="search", description="search", parameters={}, read_only=True),
            ToolSchema(name="edit", description="edit", parameters={}),
        )

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        await trio.sleep(0.5)
        return ToolResult(ok=True, output=self.outputs.get(call.name, f"{call.name} done"))


_ids = iter(range(1_000_000))


def call(name: str, **arguments: Any) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        tool_calls=(ToolCall(id=f"c{next(_ids)}", name=name, arguments=json.dumps(arguments)),),
    )


def plan(*tools: str, goal: str = "rename f to g") -> ChatMessage:
    steps = [{"id": str(i), "action": f"use {t}", "tools": [t]} for i, t in enumerate(tools, 1)]
    return call("submit_plan", goal=goal, steps=steps)


def text(content: str = "steps done") -> ChatMessage:
    return ChatMessage(role="assistant", content=content)


def reflect(
    *, achieved: bool = False, progress: str = "searched", nxt: str = "", needs_user: str = ""
) -> ChatMessage:
    return call(
        "reflect",
        goal_achieved=achieved,
        progress=progress,
        next=nxt,
        stuck=False,
        needs_user=needs_user,
    )


def iteration(tool: str = "search", **reflection: Any) -> list[ChatMessage]:
    """One iteration's replies: a plan, one call of ``tool``, the note, the reflection."""
    return [plan(tool), call(tool, pattern="f("), text(), reflect(**reflection)]


def panel_without_voting() -> ConclaveConfig:
    """Without voting, an agent that answered works again on each new answer, in PAOR for
    ``p`` (no tools: three calls of a second each). ``q`` answers at once; ``p`` answers at
    3 s and starts its second round on ``q``'s second answer (3.5 s); ``s`` answers at 4 s,
    while that round works; ``r`` answers last (10 s) and ends the run."""
    paor = AgentConfig(id="p", loop=LoopKind.PAOR, backend=ScriptedBackendConfig(latency=1.0))
    quick = AgentConfig(id="q", backend=ScriptedBackendConfig(latency=0.5, seed=1))
    mid = AgentConfig(id="s", backend=ScriptedBackendConfig(latency=4.0, seed=3))
    slow = AgentConfig(id="r", backend=ScriptedBackendConfig(latency=10.0, seed=2))
    orchestrator = OrchestratorConfig(
        quiet_period=None, skip_voting=True, max_new_answers_per_agent=2
    )
    return ConclaveConfig(agents=(paor, quick, mid, slow), orchestrator=orchestrator)
