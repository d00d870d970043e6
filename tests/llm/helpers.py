"""What the backend tests share: a sink that records, and agents pointed at a server."""

from __future__ import annotations

from typing import Any

import attrs

from actors.llm.protocol import ChatMessage, CompletionRequest
from config.schema import AgentConfig
from config.schema.anthropic import AnthropicBackendConfig
from config.schema.endpoint import Timeouts
from config.schema.openai import OpenAIBackendConfig
from config.secret import Secret
from tests.llm.loopback import LoopbackServer

__all__ = ["KEY", "Recorder", "anthropic_agent", "ask", "openai_agent"]

KEY = "sk-test-RECOGNISABLE-0123456789abcdef"
"""A key a test can grep for in everything the code under test wrote."""

FAST = Timeouts(connect=2.0, stall=2.0)


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

    def retry(self, attempt: int, status: int | None, delay: float) -> None:
        self.events.append(("retry", attempt, status, delay))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [event for event in self.events if event[0] == kind]


def ask(text: str = "hi", **kwargs: Any) -> CompletionRequest:
    return CompletionRequest(messages=(ChatMessage(role="user", content=text),), **kwargs)


def openai_agent(server: LoopbackServer, agent_id: str = "alice", **settings: Any) -> AgentConfig:
    settings.setdefault("api_key", Secret(KEY))
    settings.setdefault("timeouts", FAST)
    settings.setdefault("max_retries", 0)
    settings.setdefault("base_url", f"{server.url}/v1")
    backend = OpenAIBackendConfig(model="test-model", **settings)
    return AgentConfig(id=agent_id, backend=backend)


def anthropic_agent(
    server: LoopbackServer, agent_id: str = "alice", **settings: Any
) -> AgentConfig:
    settings.setdefault("api_key", Secret(KEY))
    settings.setdefault("timeouts", FAST)
    settings.setdefault("max_retries", 0)
    settings.setdefault("base_url", server.url)
    backend = AnthropicBackendConfig(model="claude-test", **settings)
    return AgentConfig(id=agent_id, backend=backend)
