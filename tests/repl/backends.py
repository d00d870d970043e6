"""Backends for the REPL specs: the scripted one, watched, or deaf to plan mode."""

from __future__ import annotations

import json
from collections.abc import Callable

import attrs

from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.spec import build_backend
from conclave.config.schema import AgentConfig


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


class Prose:
    """The scripted backend as a model that ignores plan mode: every answer and
    presentation is prose (the scripted backend alone answers plan mode with plans)."""

    TEXT = "Just water the plants every morning."

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        completion = await self.inner.complete(request, sink=sink)
        message = completion.message
        calls = tuple(
            attrs.evolve(call, arguments=json.dumps({"content": self.TEXT}))
            if call.name == "new_answer"
            else call
            for call in message.tool_calls
        )
        content = self.TEXT if message.content and not calls else message.content
        return attrs.evolve(
            completion, message=attrs.evolve(message, content=content, tool_calls=calls)
        )


def prose(agent: AgentConfig) -> LLMBackend:
    return Prose(build_backend(agent))
