"""What the backend tests share: a sink that records, agents pointed at a server, a tool to
offer, and the failure of one call."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

from conclave.actors.llm.errors import LLMError
from conclave.actors.llm.pool import open_backends
from conclave.actors.llm.protocol import ChatMessage, CompletionRequest, ToolSchema
from conclave.config.schema import AgentConfig
from conclave.config.schema.anthropic import AnthropicBackendConfig
from conclave.config.schema.endpoint import Timeouts
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from tests.llm.loopback import LoopbackServer

__all__ = [
    "KEY",
    "VOTE",
    "Recorder",
    "anthropic_agent",
    "ask",
    "fails",
    "openai_agent",
    "timed_failure",
]

KEY = "sk-test-RECOGNISABLE-0123456789abcdef"
"""A key a test can grep for in everything the code under test wrote."""

FAST = Timeouts(connect=10.0, first_byte=2.0, first_token=2.0, stall=2.0)
"""Bounds for specs that do not measure them (those that do set their own): a loopback
connect is immediate, but on a loaded machine one of a thousand was seen to take over 2 s."""

VOTE = ToolSchema(
    name="vote",
    description="Vote for an answer.",
    parameters={"type": "object", "properties": {"agent_id": {"type": "string"}}},
)


@attrs.define
class Recorder:
    """A CompletionSink that keeps everything it hears, in order."""

    events: list[tuple[Any, ...]] = attrs.field(factory=list)

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))

    def reasoning(self, delta: str) -> None:
        self.events.append(("reasoning", delta))

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        self.events.append(("tool_arguments", index, name, delta))

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        self.events.append(("retry", attempt, status, delay, error))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [event for event in self.events if event[0] == kind]


def ask(text: str = "hi", **kwargs: Any) -> CompletionRequest:
    return CompletionRequest(messages=(ChatMessage(role="user", content=text),), **kwargs)


def _agent(
    agent_id: str,
    section: type[OpenAIBackendConfig | AnthropicBackendConfig],
    model: str,
    base_url: str,
    settings: dict[str, Any],
) -> AgentConfig:
    """An agent with our key, short timeouts and no retries, unless ``settings`` say else."""
    settings.setdefault("api_key", Secret(KEY))
    settings.setdefault("timeouts", FAST)
    settings.setdefault("max_retries", 0)
    settings.setdefault("base_url", base_url)
    return AgentConfig(id=agent_id, backend=section(model=model, **settings))


def openai_agent(server: LoopbackServer, agent_id: str = "alice", **settings: Any) -> AgentConfig:
    return _agent(agent_id, OpenAIBackendConfig, "test-model", f"{server.url}/v1", settings)


def anthropic_agent(
    server: LoopbackServer, agent_id: str = "alice", **settings: Any
) -> AgentConfig:
    return _agent(agent_id, AnthropicBackendConfig, "claude-test", server.url, settings)


async def timed_failure(agent: AgentConfig) -> tuple[LLMError, float]:
    """The error of one call, and how long the call took (not counting the SDK's import)."""
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        started = trio.current_time()
        with pytest.raises(LLMError) as caught:
            await backend.complete(ask())
        return caught.value, trio.current_time() - started


async def fails(agent: AgentConfig) -> LLMError:
    """The error of one call."""
    error, _seconds = await timed_failure(agent)
    return error
