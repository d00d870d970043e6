"""The backend interface every LLM speaks: chat messages and tool schemas in, one assistant
message (text and/or tool calls) out. Scripted, OpenAI and Anthropic backends implement it."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import attrs

__all__ = [
    "ChatMessage",
    "Completion",
    "CompletionRequest",
    "LLMBackend",
    "LLMError",
    "ToolCall",
    "ToolSchema",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]


@attrs.frozen(kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """Raw JSON text, as the model produced it: parsing (and failing to) is the caller's job."""


@attrs.frozen(kw_only=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@attrs.frozen(kw_only=True)
class ToolSchema:
    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool = False
    """Changes nothing outside the call: the loop may run it concurrently with other
    read-only calls, and plan mode offers only these."""


@attrs.frozen(kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@attrs.frozen(kw_only=True)
class CompletionRequest:
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSchema, ...] = ()


@attrs.frozen(kw_only=True)
class Completion:
    message: ChatMessage
    usage: Usage = Usage()


class LLMError(Exception):
    """A backend failed to produce a completion (network, server, injected failure)."""


class LLMBackend(Protocol):
    """One model endpoint for one agent. Must be cancellation-safe: a cancelled
    ``complete`` leaves the backend usable for the next call."""

    async def complete(self, request: CompletionRequest) -> Completion: ...
