"""The ``anthropic`` backend: the Messages API, through the official SDK.

Imported only when a config names an ``anthropic`` agent (the pool's provider table).

What the Messages API wants that Chat Completions does not:

- the system prompt goes in ``system``, not among the messages;
- tool calls are ``tool_use`` blocks of the assistant's turn and their results
  ``tool_result`` blocks of the next user turn: consecutive tool results are merged into one
  user turn (the API wants turns to alternate);
- ``max_tokens`` is required;
- with extended thinking, the assistant's signed thinking blocks must be sent back as they
  came within a tool loop: they travel in ``ChatMessage.provider_state``;
- prompt caching is explicit: ``cache_control`` marks where a cached prefix ends. Three
  marks at most (the API takes four): the end of the tools and the system prompt (every
  request of the run shares them), the message the prompt marks as the end of what other
  requests share (``ChatMessage.cache_point``: a round's task and answers, the same for every
  agent shown them), and, once a tool loop is under way (the conversation holds a reply of
  the model), the last block, which the loop's next step sends again. A mark on a prefix
  below the model's minimum is ignored by the API; a first step's last block is not marked
  (nothing may read it, and writing costs more than reading).

Every call streams, assembled by hand from the raw events of ``create(stream=True)``: the
SDK's stream helper turns malformed tool-call JSON into ``{}`` without a word, and the
workflow parser must see what the model wrote. A mid-stream ``error`` event (an overload,
reported with status 200) and a stalled or dropped stream (a bare ``httpx2`` error) are
failed tries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import attrs
import httpx2

from conclave.actors.llm.http_errors import Diagnosis
from conclave.actors.llm.http_hooks import preload_transport
from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    StopReason,
    ToolCall,
    ToolChoice,
    Usage,
)
from conclave.actors.llm.sdk_endpoint import SdkBackend, SdkProvider, SdkStream, StreamedReply
from conclave.config.schema.anthropic import MIN_THINKING_BUDGET, AnthropicBackendConfig
from conclave.config.secret import Secret

__all__ = ["ANTHROPIC_URL", "PROVIDER", "STATE_KEY", "AnthropicBackend", "AnthropicProvider"]

preload_transport()  # the SDK sends through httpx2

ANTHROPIC_URL = "https://api.anthropic.com"
STATE_KEY = "anthropic_thinking"
"""``ChatMessage.provider_state[STATE_KEY]``: the reply's thinking blocks, to send back."""
_EPHEMERAL = {"type": "ephemeral"}

_STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
}


class AnthropicBackend(SdkBackend[AnthropicBackendConfig, anthropic.AsyncAnthropic]):
    """One agent's view of a Messages API endpoint (see :class:`SdkBackend`)."""

    SDK_ERROR = anthropic.AnthropicError
    CONNECTION_ERROR = anthropic.APIConnectionError
    OMIT = anthropic.omit
    STREAM_END = "message_stop"
    PROTOCOL = "the Messages API"

    async def _open_stream(self, arguments: dict[str, Any]) -> SdkStream:
        stream: SdkStream = await self._client.messages.create(**arguments)
        return stream

    def _reply(self) -> StreamedReply:
        return _Reply()

    def _status_diagnosis(self, exc: Exception) -> Diagnosis | None:
        if isinstance(exc, anthropic.APIStatusError):
            # A mid-stream ``error`` event arrives as a status error with the 200 of the
            # stream: its body's type says what happened.
            return self._status(exc.status_code, exc.type, exc.body, exc.message)
        return None

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        config = self._config
        caching = config.prompt_caching
        system, messages = _conversation(request.messages, caching=caching)
        limits = [n for n in (request.max_output_tokens, config.max_output_tokens) if n]
        max_tokens = min(limits)
        arguments: dict[str, Any] = {
            "model": config.model,
            "max_tokens": max_tokens,
            "messages": messages,
            "stream": True,
            "timeout": self._timeout,
        }
        thinking = _thinking_budget(config.thinking_budget, max_tokens)
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if caching:
            # The end of what every request shares (tools, then system); see the docstring.
            marked = system or tools
            if marked:
                marked[-1] = {**marked[-1], "cache_control": _EPHEMERAL}
            if messages[-1]["role"] == "user" and any(t["role"] == "assistant" for t in messages):
                last = messages[-1]["content"]
                last[-1] = {**last[-1], "cache_control": _EPHEMERAL}
        if system:
            arguments["system"] = system
        if tools:
            arguments["tools"] = tools
            choice = request.tool_choice
            if choice is ToolChoice.REQUIRED and thinking is not None:
                # Extended thinking accepts only auto or none.
                choice = ToolChoice.AUTO
            arguments["tool_choice"] = {"type": _TOOL_CHOICE[choice]}
        if thinking is not None:
            arguments["thinking"] = {"type": "enabled", "budget_tokens": thinking}
        body = dict(config.extra_body)
        if config.temperature is not None:
            # This SDK's create() no longer names sampling settings; the API still takes them.
            body.setdefault("temperature", config.temperature)
        if body:
            arguments["extra_body"] = body
        return arguments


class AnthropicProvider(SdkProvider[AnthropicBackendConfig, anthropic.AsyncAnthropic]):
    """Agents on one server with one key share one client."""

    NAME = "anthropic"
    DEFAULT_URL = ANTHROPIC_URL
    CONFIG = AnthropicBackendConfig
    BACKEND = AnthropicBackend

    def _client(
        self,
        config: AnthropicBackendConfig,
        base_url: str,
        key: Secret | None,
        http: Callable[[], httpx2.AsyncClient],
    ) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=key.reveal() if key is not None else "",
            base_url=base_url,
            http_client=http(),
            max_retries=0,
            open_telemetry=False,
        )


PROVIDER = AnthropicProvider()


_TOOL_CHOICE = {ToolChoice.AUTO: "auto", ToolChoice.REQUIRED: "any", ToolChoice.NONE: "none"}


def _thinking_budget(budget: int | None, max_tokens: int) -> int | None:
    """The budget, kept below this call's ``max_tokens``; ``None`` (no thinking) when that
    leaves less than the API's minimum."""
    if budget is None:
        return None
    fitted = min(budget, max_tokens - 1)
    return fitted if fitted >= MIN_THINKING_BUDGET else None


def _conversation(
    messages: tuple[ChatMessage, ...], *, caching: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, turns): system messages into ``system``; each other message into the
    blocks of a turn, consecutive messages of the same role into one turn. With ``caching``,
    a message marked as a cache point has its last block marked."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append({"type": "text", "text": message.content})
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if caching and message.cache_point:
            blocks[-1] = {**blocks[-1], "cache_control": _EPHEMERAL}
        if turns and turns[-1]["role"] == role:
            merged = turns[-1]["content"] + blocks
            # Tool results must open the user turn that answers the tool calls.
            merged.sort(key=lambda block: block["type"] != "tool_result")
            turns[-1]["content"] = merged
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content or "(no output)",
            }
        ]
    if message.role != "assistant":
        return [{"type": "text", "text": message.content or "(empty)"}]
    state = message.provider_state or {}
    blocks: list[dict[str, Any]] = [dict(block) for block in state.get(STATE_KEY, ())]
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        for call in message.tool_calls
    ]
    if not blocks:
        blocks.append({"type": "text", "text": "(empty reply)"})
    return blocks


def _input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as the object the API wants back; arguments that were not a
    JSON object are sent back as written, under ``invalid_json``."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"invalid_json": arguments}
    return value if isinstance(value, dict) else {"invalid_json": arguments}


@attrs.define
class _Block:
    type: str
    parts: list[str] = attrs.field(factory=list)
    """Text, thinking, or tool-call argument JSON, as it streamed."""
    signature: str = ""
    data: str = ""
    """A redacted thinking block's opaque content."""
    id: str = ""
    name: str = ""
    tool_index: int = 0
    initial_input: Any = None


@attrs.define
class _Reply:
    """A reply assembled from its events."""

    blocks: dict[int, _Block] = attrs.field(factory=dict)
    input_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    model: str = ""
    finished: bool = False
    """``message_stop`` arrived."""

    def add(self, event: Any, sink: CompletionSink | None) -> None:
        kind = event.type
        if kind == "message_start":
            self.model = event.message.model or ""
            self._usage(event.message.usage)
        elif kind == "content_block_start":
            self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            self._delta(event.index, event.delta, sink)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            if event.usage is not None:
                self._usage(event.usage)
        elif kind == "message_stop":
            self.finished = True

    def _usage(self, usage: Any) -> None:
        # message_start carries the prompt's counts; message_delta the reply's, cumulative
        # (and, on newer servers, the prompt's again).
        self.input_tokens = getattr(usage, "input_tokens", None) or self.input_tokens
        self.cache_read = getattr(usage, "cache_read_input_tokens", None) or self.cache_read
        self.cache_write = getattr(usage, "cache_creation_input_tokens", None) or self.cache_write
        self.output_tokens = getattr(usage, "output_tokens", None) or self.output_tokens

    def _start(self, index: int, block: Any) -> None:
        new = _Block(type=block.type)
        if block.type == "text" and block.text:
            new.parts.append(block.text)
        elif block.type == "thinking":
            new.signature = block.signature or ""
            if block.thinking:
                new.parts.append(block.thinking)
        elif block.type == "redacted_thinking":
            new.data = block.data
        elif block.type == "tool_use":
            new.id, new.name = block.id, block.name
            new.tool_index = sum(1 for b in self.blocks.values() if b.type == "tool_use")
            new.initial_input = block.input
        self.blocks[index] = new

    def _delta(self, index: int, delta: Any, sink: CompletionSink | None) -> None:
        block = self.blocks.get(index)
        if block is None:
            return
        kind = delta.type
        if kind == "text_delta":
            block.parts.append(delta.text)
            if sink is not None:
                sink.text(delta.text)
        elif kind == "thinking_delta":
            block.parts.append(delta.thinking)
            if sink is not None:
                sink.reasoning(delta.thinking)
        elif kind == "signature_delta":
            block.signature += delta.signature
        elif kind == "input_json_delta":
            block.parts.append(delta.partial_json)
            if sink is not None and delta.partial_json:
                sink.tool_arguments(block.tool_index, block.name, delta.partial_json)

    def completion(self) -> Completion:
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
        text = "".join("".join(b.parts) for b in ordered if b.type == "text")
        calls = tuple(
            ToolCall(id=b.id, name=b.name, arguments=_arguments_of(b))
            for b in ordered
            if b.type == "tool_use"
        )
        thinking = [_thinking_block(b) for b in ordered if b.type in _THINKING]
        return Completion(
            message=ChatMessage(
                role="assistant",
                content=text,
                tool_calls=calls,
                provider_state={STATE_KEY: thinking} if thinking else None,
            ),
            usage=Usage(
                input_tokens=self.input_tokens + self.cache_read + self.cache_write,
                output_tokens=self.output_tokens,
                cache_read_tokens=self.cache_read,
                cache_write_tokens=self.cache_write,
            ),
            stop_reason=_STOP_REASONS.get(self.stop_reason or "", StopReason.OTHER),
            model=self.model,
        )


_THINKING = ("thinking", "redacted_thinking")


def _arguments_of(block: _Block) -> str:
    """The arguments as streamed; a call that streamed none has its start's input."""
    if block.parts:
        return "".join(block.parts)
    return json.dumps(block.initial_input if block.initial_input is not None else {})


def _thinking_block(block: _Block) -> dict[str, Any]:
    if block.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "thinking", "thinking": "".join(block.parts), "signature": block.signature}
