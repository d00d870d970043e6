"""A model that plays a parent and its sub-agents by reading each transcript, and an actor
that runs a PAOR round with sub-agents under its own supervisor."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import trio

from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    Usage,
)
from conclave.actors.loop import LoopBudget, Transcript
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.report import PaorOutcome
from conclave.actors.paor.subagent_prompts import read_subtask
from conclave.actors.paor.subagents import SubAgents, SubAgentSetup
from conclave.config.schema import PaorConfig
from conclave.runtime import Actor, ActorContext, ActorFactory, Address, Envelope
from tests.paor.helpers import TableTools, call, reflect, text
from tests.runtime.helpers import Crash

CALL_TOKENS = Usage(input_tokens=10, output_tokens=5)
"""What every call of the :class:`RoleModel` costs: 15 tokens."""


class RoleModel:
    """Plays the parent (its plan is ``steps``) and each sub-agent (one ``search``, then a
    reflection whose progress reports what the search returned), one second a call.

    A sub-agent whose task starts with ``delegate:`` first plans a delegated step of its own
    (and plans without it once that is refused)."""

    def __init__(self, steps: list[dict[str, Any]], *, latency: float = 1.0) -> None:
        self.steps = steps
        self.latency = latency
        self.offered: dict[str, list[set[str]]] = {}
        """Per sub-agent task, the tools offered in each of its calls."""
        self.prompts: dict[str, str] = {}
        """Per sub-agent task, its first message."""

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        await trio.sleep(self.latency)
        messages = request.messages
        offered = {t.name for t in request.tools}
        sub = read_subtask(messages)
        if sub is None:
            reply = self._parent(messages, offered)
        else:
            _, task = sub
            self.offered.setdefault(task, []).append(offered)
            self.prompts[task] = messages[0].content
            reply = self._sub(task, messages, offered)
        return Completion(message=reply, usage=CALL_TOKENS)

    def _parent(self, messages: Sequence[ChatMessage], offered: set[str]) -> ChatMessage:
        if offered == {"submit_plan"}:
            return call("submit_plan", goal="understand, then report", steps=self.steps)
        if offered == {"reflect"}:
            seen = [m.content for m in messages if m.role == "user"][-1]
            return reflect(achieved=True, progress=f"parent saw: {seen}")
        if _acted(messages):
            return text("done")
        return call("search", pattern="parent")

    def _sub(self, task: str, messages: Sequence[ChatMessage], offered: set[str]) -> ChatMessage:
        if offered == {"submit_plan"}:
            refused = any(m.role == "tool" and "cannot nest deeper" in m.content for m in messages)
            steps: list[dict[str, Any]]
            if task.startswith("delegate:") and not refused:
                steps = [{"id": "1", "action": "deeper", "delegate": "worker"}]
            else:
                steps = [{"id": "1", "action": "search", "tools": ["search"]}]
            return call("submit_plan", goal=task, steps=steps)
        if offered == {"reflect"}:
            found = [m.content for m in messages if _is_result(m)]
            return reflect(achieved=True, progress=f"{task}: {found[-1] if found else ''}")
        if _acted(messages):
            return text("searched")
        if "edit" in offered and task.startswith("edit:"):
            return call("edit", path="a.py")
        return call("search", pattern=task)


def _is_result(message: ChatMessage) -> bool:
    """A tool's result (not the answer to submit_plan or reflect)."""
    return message.role == "tool" and not message.content.startswith(("Plan accepted", "Noted"))


def _acted(messages: Sequence[ChatMessage]) -> bool:
    return _is_result(messages[-1])


def delegated(*steps: tuple[str, str, list[str]], own: bool = False) -> list[dict[str, Any]]:
    """Plan steps: (id, "kind:task", depends_on) each; ``own`` adds a search of the agent's."""
    out: list[dict[str, Any]] = []
    for ident, spec, after in steps:
        kind, _, task = spec.partition(":")
        out.append({"id": ident, "action": task, "delegate": kind, "depends_on": after})
    if own:
        out.append({"id": "own", "action": "search myself", "tools": ["search"]})
    return out


class Host(Actor):
    """Runs one PAOR round with sub-agents when it starts; hands its outcome over."""

    def __init__(
        self,
        context: ActorContext,
        run: Callable[[ActorContext], Any],
    ) -> None:
        super().__init__(context)
        self._run = run

    async def started(self) -> None:
        self.context.start_soon(self._run, self.context)

    async def handle(self, envelope: Envelope) -> None:
        if isinstance(envelope.payload, Crash):
            raise RuntimeError(envelope.payload.reason)


HOST = Address("host", "h")


def host(
    model: RoleModel,
    tools: TableTools,
    outcomes: list[PaorOutcome],
    *,
    settings: PaorConfig | None = None,
    tokens: int | None = None,
    seconds: float | None = None,
    wrap: Callable[[ActorFactory], ActorFactory] | None = None,
    done: trio.Event | None = None,
) -> ActorFactory:
    paor = settings or PaorConfig()

    async def run(context: ActorContext) -> None:
        setup = SubAgentSetup(
            agent="h", backend=model, tools=tools, budget=LoopBudget(), settings=paor, wrap=wrap
        )
        loop = PaorLoop(
            backend=model,
            tools=tools,
            budget=LoopBudget(),
            settings=paor,
            delegate=SubAgents(context, setup, parent="h"),
            tokens=tokens,
            seconds=seconds,
        )
        transcript = Transcript([ChatMessage(role="user", content="understand the code")])
        outcomes.append(await loop.run(transcript))
        if done is not None:
            done.set()

    return lambda context: Host(context, run)


def arguments(observation_arguments: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(observation_arguments)
    return loaded
