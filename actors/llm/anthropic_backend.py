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
- prompt caching is explicit: ``cache_control`` marks the end of the stable prefix (the tools
  and the system prompt).

Every call streams, assembled by hand from the raw events of ``create(stream=True)``: the
SDK's stream helper turns malformed tool-call JSON into ``{}`` without a word, and the
workflow parser must see what the model wrote. A mid-stream ``error`` event (an overload,
reported with status 200) and a stalled or dropped stream (a bare ``httpx2`` error) are
failed tries.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Hashable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anthropic
import attrs
import httpx2
import trio

from actors.llm.errors import FatalLLMError, LLMError, TransientLLMError
from actors.llm.http_errors import (
    Diagnosis,
    connection_diagnosis,
    error_message,
    failure,
    status_diagnosis,
)
from actors.llm.http_hooks import (
    EndpointGate,
    KeyStatus,
    call_scope,
    http_client,
    http_timeout,
    key_status,
    resolve_key,
)
from actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    StopReason,
    ToolCall,
    ToolChoice,
    Usage,
)
from config.schema import AgentConfig
from config.schema.anthropic import MIN_THINKING_BUDGET, AnthropicBackendConfig
from config.schema.endpoint import endpoint_host

__all__ = ["ANTHROPIC_URL", "PROVIDER", "STATE_KEY", "AnthropicBackend", "AnthropicProvider"]

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


def _config(agent: AgentConfig) -> AnthropicBackendConfig:
    backend = agent.backend
    if not isinstance(backend, AnthropicBackendConfig):
        raise TypeError(f"agent {agent.id!r} is not an anthropic agent")
    return backend


def _base_url(config: AnthropicBackendConfig) -> str:
    return config.base_url or ANTHROPIC_URL


class AnthropicProvider:
    """Agents on one server with one key share one client."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self._environ = environ

    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        config = _config(agent)
        return (_base_url(config), resolve_key(config, self._environ))

    async def open_endpoint(self, agent: AgentConfig, stack: AsyncExitStack) -> _Endpoint:
        config = _config(agent)
        base_url = _base_url(config)
        key = resolve_key(config, self._environ)
        gate = EndpointGate(requests_per_minute=config.requests_per_minute)
        client = anthropic.AsyncAnthropic(
            api_key=key.reveal() if key is not None else "",
            base_url=base_url,
            http_client=http_client(config, gate),
            max_retries=config.max_retries,
            open_telemetry=False,
        )
        await stack.enter_async_context(client)
        return _Endpoint(
            client=client,
            host=endpoint_host(base_url),
            key_status=key_status(key, base_url),
        )

    def concurrency(self, agent: AgentConfig) -> float:
        return _config(agent).max_concurrency


PROVIDER = AnthropicProvider()


@attrs.frozen(kw_only=True)
class _Endpoint:
    client: anthropic.AsyncAnthropic
    host: str
    key_status: KeyStatus

    def backend_for(self, agent: AgentConfig) -> AnthropicBackend:
        config = _config(agent)
        client = self.client
        if config.max_retries != client.max_retries:
            client = client.with_options(max_retries=config.max_retries)
        return AnthropicBackend(
            client=client,
            config=config,
            agent_id=agent.id,
            host=self.host,
            key_status=self.key_status,
        )


class AnthropicBackend:
    """One agent's view of a Messages API endpoint. Cancellation-safe: a cancelled call
    closes its stream at once and the shared client serves the next call."""

    def __init__(
        self,
        *,
        client: anthropic.AsyncAnthropic,
        config: AnthropicBackendConfig,
        agent_id: str,
        host: str,
        key_status: KeyStatus = KeyStatus.GIVEN,
    ) -> None:
        self._client = client
        self._config = config
        self._agent_id = agent_id
        self._host = host
        self._key_status = key_status
        self._timeout = http_timeout(config.timeouts)

    def _fail(self, diagnosis: Diagnosis) -> LLMError:
        return failure(
            diagnosis.kind,
            agent=self._agent_id,
            host=self._host,
            cause=diagnosis.cause,
            key=self._config.api_key,
        )

    def _key_hint(self) -> str:
        if self._config.api_key is not None:
            return "api_key"
        return f"api_key or the {self._config.api_key_env} environment variable"

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if self._key_status is KeyStatus.MISSING:
            raise self._fail(Diagnosis(FatalLLMError, f"no API key: set {self._key_hint()}"))
        arguments = self._arguments(request)
        total = self._config.timeouts.total
        with call_scope(sink, max_retries=self._config.max_retries):
            with trio.move_on_after(math.inf if total is None else total) as timer:
                return await self._call(arguments, sink)
        assert timer.cancelled_caught
        raise self._fail(
            Diagnosis(TransientLLMError, f"the call took longer than {total:g}s (timeouts.total)")
        )

    async def _call(self, arguments: dict[str, Any], sink: CompletionSink | None) -> Completion:
        try:
            stream = await self._client.messages.create(**arguments)
        except anthropic.AnthropicError as exc:
            raise self._fail(self._diagnose(exc, started=False)) from None
        reply = _Reply()
        try:
            async with stream:
                async for event in stream:
                    reply.add(event, sink)
        except anthropic.AnthropicError as exc:
            raise self._fail(self._diagnose(exc, started=True)) from None
        except (httpx2.HTTPError, ValueError, OSError) as exc:
            raise self._fail(
                connection_diagnosis(exc, started=True, timeouts=self._config.timeouts)
            ) from None
        if not reply.stopped:
            raise self._fail(
                Diagnosis(
                    TransientLLMError,
                    "the stream ended before the reply was finished (no message_stop)",
                )
            )
        return reply.completion()

    def _diagnose(self, exc: anthropic.AnthropicError, *, started: bool) -> Diagnosis:
        if isinstance(exc, anthropic.APIStatusError):
            # A mid-stream ``error`` event arrives as a status error with the 200 of the
            # stream: its body's type says what happened.
            return status_diagnosis(
                exc.status_code,
                exc.type,
                error_message(exc.body, exc.message),
                key_hint=self._key_hint(),
                model=self._config.model,
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return connection_diagnosis(exc, started=started, timeouts=self._config.timeouts)
        return Diagnosis(TransientLLMError, f"{type(exc).__name__}: {exc}")

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        config = self._config
        system, messages = _conversation(request.messages)
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
        if config.prompt_caching:
            # One breakpoint at the end of the stable prefix (tools, then system).
            marked = system or tools
            if marked:
                marked[-1] = {**marked[-1], "cache_control": _EPHEMERAL}
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
        headers: dict[str, str | anthropic.Omit] = dict(config.extra_headers)
        if self._key_status is KeyStatus.NOT_NEEDED:
            headers["Authorization"] = anthropic.omit
        if headers:
            arguments["extra_headers"] = headers
        return arguments


_TOOL_CHOICE = {ToolChoice.AUTO: "auto", ToolChoice.REQUIRED: "any", ToolChoice.NONE: "none"}


def _thinking_budget(budget: int | None, max_tokens: int) -> int | None:
    """The budget, kept below this call's ``max_tokens``; ``None`` (no thinking) when that
    leaves less than the API's minimum."""
    if budget is None:
        return None
    fitted = min(budget, max_tokens - 1)
    return fitted if fitted >= MIN_THINKING_BUDGET else None


def _conversation(
    messages: tuple[ChatMessage, ...],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, turns): system messages into ``system``; each other message into the
    blocks of a turn, consecutive messages of the same role into one turn."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append({"type": "text", "text": message.content})
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
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
    stopped: bool = False

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
            self.stopped = True

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
