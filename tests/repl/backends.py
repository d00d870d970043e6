"""Backends for the REPL specs: the scripted one, watched or turned into a planner."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from actors.planning.scripted_plans import as_plan_reply
from actors.run.spec import build_backend
from config.schema import AgentConfig


class Recording:
    """The agent's scripted backend, keeping every request it is sent."""

    def __init__(self, inner: LLMBackend, requests: list[CompletionRequest]) -> None:
        self.inner = inner
        self.requests = requests

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        return await self.inner.complete(request, sink=sink)


def recording(
    requests: dict[str, list[CompletionRequest]],
) -> Callable[[AgentConfig], LLMBackend]:
    """A backend factory whose backends record their requests by agent into ``requests``."""

    def factory(agent: AgentConfig) -> LLMBackend:
        return Recording(build_backend(agent), requests.setdefault(agent.id, []))

    return factory


class Planner:
    """The scripted backend answering as a planning model does when the prompt is in plan
    mode (JSON plans); otherwise as it is."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        completion = await self.inner.complete(request, sink=sink)
        return attrs.evolve(completion, message=as_plan_reply(request.messages, completion.message))


def planners(agent: AgentConfig) -> LLMBackend:
    return Planner(build_backend(agent))


def recording_planners(
    requests: dict[str, list[CompletionRequest]],
) -> Callable[[AgentConfig], LLMBackend]:
    """:func:`planners` whose requests are recorded by agent into ``requests``."""

    def factory(agent: AgentConfig) -> LLMBackend:
        return Planner(Recording(build_backend(agent), requests.setdefault(agent.id, [])))

    return factory
