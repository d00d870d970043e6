"""Builders for the coordination specs: scripted agents, configs, and runs with an event tap.

Every run here goes through the real actors (``actors.run``) on the scripted backend; the
tests run under ``autojump_clock``, so scripted latencies cost no real time and the order
of events is decided by the latencies alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import trio

from conclave.actors.agent.events import LlmRequestStarted, RoundRestarted, RoundStarted
from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.driver import RunSpec, build_backend, run
from conclave.actors.run.result import RunResult
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.runtime import Delivered, Event, MemoryTap, Message

M = TypeVar("M", bound=Message)

TASK = "Name three uses of a paperclip"
RUN_LIMIT = 3600.0
"""Virtual seconds after which a run counts as hung (the autojump clock gets there at once)."""


def agent(agent_id: str, *, persona: str = "", **backend: Any) -> AgentConfig:
    """A scripted agent; ``backend`` holds ScriptedBackendConfig fields (latency, vote, ...)."""
    return AgentConfig(id=agent_id, persona=persona, backend=ScriptedBackendConfig(**backend))


def agents(n: int, **backend: Any) -> tuple[AgentConfig, ...]:
    """``n`` alike scripted agents ``a1..an`` with distinct seeds (hence distinct answers)."""
    return tuple(agent(f"a{i}", seed=i, **backend) for i in range(1, n + 1))


def config(*members: AgentConfig, **orchestrator: Any) -> ConclaveConfig:
    return ConclaveConfig(agents=members, orchestrator=OrchestratorConfig(**orchestrator))


@attrs.frozen
class Run:
    """A finished run and every event it produced."""

    result: RunResult
    tap: MemoryTap

    def events(self, cls: type[Any]) -> list[Any]:
        return self.tap.of_type(cls)

    def position(self, event: Event) -> int:
        """Where ``event`` is in the order events happened."""
        return next(i for i, e in enumerate(self.tap.events) if e is event)

    def llm_calls(self, agent_id: str) -> int:
        return sum(1 for e in self.events(LlmRequestStarted) if e.agent == agent_id)

    def restarts(self, agent_id: str) -> int:
        return sum(1 for e in self.events(RoundRestarted) if e.agent == agent_id)

    def rounds(self, agent_id: str) -> list[RoundStarted]:
        return [e for e in self.events(RoundStarted) if e.agent == agent_id]

    def answer_of(self, agent_id: str) -> str:
        """The content of ``agent_id``'s latest answer."""
        return [a.content for a in self.result.answers if a.agent == agent_id][-1]

    def answers_added(self, agent_id: str | None = None) -> list[AnswerAdded]:
        return [e for e in self.events(AnswerAdded) if agent_id in (None, e.agent)]

    def payloads(self, payload: type[M], to: str | None = None) -> list[tuple[Delivered, M]]:
        """Like :meth:`delivered`, each with its payload typed."""
        found = []
        for delivery in self.delivered(payload, to):
            message = delivery.envelope.payload
            assert isinstance(message, payload)
            found.append((delivery, message))
        return found

    def delivered(self, payload: type[Any], to: str | None = None) -> list[Delivered]:
        """Deliveries of ``payload`` messages, optionally only to agent ``to``."""
        return [
            e
            for e in self.events(Delivered)
            if isinstance(e.envelope.payload, payload) and to in (None, e.envelope.recipient.key)
        ]


async def run_tapped(cfg: ConclaveConfig, task: str = TASK, **spec: Any) -> Run:
    """Run ``task`` on ``cfg`` to the end; ``spec`` holds further RunSpec fields."""
    tap = MemoryTap()
    with trio.fail_after(RUN_LIMIT):
        result = await run(RunSpec(task=task, config=cfg, **spec), taps=[tap])
    return Run(result=result, tap=tap)


class WaitingTap(MemoryTap):
    """A MemoryTap a test can wait on: ``await tap.wait_for(VotingComplete)``."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = trio.Event()

    def record(self, event: Event) -> None:
        super().record(event)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, cls: type[Any], where: Callable[[Any], bool] | None = None) -> Any:
        """The first ``cls`` event (that ``where`` accepts), once there is one."""
        while True:
            found = [e for e in self.of_type(cls) if where is None or where(e)]
            if found:
                return found[0]
            await self._changed.wait()


class RecordingBackend:
    """Wraps the real scripted backend and keeps every request it was sent."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner
        self.requests: list[CompletionRequest] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        return await self.inner.complete(request)


class Recorder:
    """A ``backend_factory`` that records each agent's requests (by config id)."""

    def __init__(self) -> None:
        self.backends: dict[str, RecordingBackend] = {}

    def __call__(self, member: AgentConfig) -> LLMBackend:
        backend = RecordingBackend(build_backend(member))
        self.backends[member.id] = backend
        return backend

    def prompts(self, agent_id: str) -> list[str]:
        """Each request of ``agent_id`` as one text (every message's content, in order)."""
        return [
            "\n".join(m.content for m in request.messages)
            for request in self.backends[agent_id].requests
        ]
