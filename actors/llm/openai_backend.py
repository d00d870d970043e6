"""The ``openai`` backend: any OpenAI-compatible Chat Completions endpoint, through the
official SDK.

Imported only when a config names an ``openai`` agent (the pool's provider table), so a run
that does not use it never pays for importing the SDK.

Every call streams, and the reply is assembled by hand from the raw chunks of
``create(stream=True)``, per tool-call index: the SDK's stream helper raises when a reply hits
the token limit, and the raw chunks are also what compatible servers agree on. Tool-call
arguments are passed on exactly as the model wrote them, valid JSON or not: judging them is
the workflow parser's job. Usage arrives (with ``stream_options.include_usage``) in a last
chunk whose ``choices`` is empty.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import attrs
import httpx2
import openai
import trio
from openai.types.chat import ChatCompletionChunk

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
from config.schema.endpoint import endpoint_host
from config.schema.openai import OpenAIBackendConfig

__all__ = ["OPENAI_URL", "PROVIDER", "OpenAIBackend", "OpenAIProvider"]

OPENAI_URL = "https://api.openai.com/v1"

_STOP_REASONS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def _config(agent: AgentConfig) -> OpenAIBackendConfig:
    backend = agent.backend
    if not isinstance(backend, OpenAIBackendConfig):
        raise TypeError(f"agent {agent.id!r} is not an openai agent")
    return backend


def _base_url(config: OpenAIBackendConfig) -> str:
    return config.base_url or OPENAI_URL


async def _no_key() -> str:
    """The key source of a server that needs none (a local Ollama, vLLM, LM Studio): the SDK
    insists on a key or a source of one, and sends no ``Authorization`` for an empty one."""
    return ""


class OpenAIProvider:
    """Agents on one server with one key share one client."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self._environ = environ

    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        config = _config(agent)
        return (_base_url(config), resolve_key(config, self._environ), config.api_version)

    async def open_endpoint(self, agent: AgentConfig, stack: AsyncExitStack) -> _Endpoint:
        config = _config(agent)
        base_url = _base_url(config)
        key = resolve_key(config, self._environ)
        sent_key = key.reveal() if key is not None else _no_key
        gate = EndpointGate(requests_per_minute=config.requests_per_minute)
        http = http_client(config, gate)
        client: openai.AsyncOpenAI
        if config.api_version is not None:
            client = openai.AsyncAzureOpenAI(
                azure_endpoint=base_url,
                azure_deployment=config.deployment or config.model,
                api_version=config.api_version,
                api_key=sent_key,
                http_client=http,
                max_retries=config.max_retries,
            )
        else:
            client = openai.AsyncOpenAI(
                api_key=sent_key,
                base_url=base_url,
                http_client=http,
                max_retries=config.max_retries,
            )
        await stack.enter_async_context(client)
        return _Endpoint(
            client=client,
            gate=gate,
            host=endpoint_host(base_url),
            key_status=key_status(key, base_url),
        )

    def concurrency(self, agent: AgentConfig) -> float:
        return _config(agent).max_concurrency


PROVIDER = OpenAIProvider()


@attrs.frozen(kw_only=True)
class _Endpoint:
    client: openai.AsyncOpenAI
    gate: EndpointGate
    host: str
    key_status: KeyStatus

    def backend_for(self, agent: AgentConfig) -> OpenAIBackend:
        config = _config(agent)
        client = self.client
        if config.max_retries != client.max_retries:
            client = client.with_options(max_retries=config.max_retries)
        return OpenAIBackend(
            client=client,
            config=config,
            agent_id=agent.id,
            host=self.host,
            key_status=self.key_status,
            gate=self.gate,
        )


class OpenAIBackend:
    """One agent's view of an OpenAI-compatible endpoint. Cancellation-safe: a cancelled
    call closes its stream at once (the connection is dropped, not returned half-read) and
    the shared client serves the next call."""

    def __init__(
        self,
        *,
        client: openai.AsyncOpenAI,
        config: OpenAIBackendConfig,
        agent_id: str,
        host: str,
        key_status: KeyStatus = KeyStatus.GIVEN,
        gate: EndpointGate | None = None,
    ) -> None:
        self._client = client
        self._config = config
        self._agent_id = agent_id
        self._host = host
        self._key_status = key_status
        self.gate = gate
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
            raise self._fail(
                Diagnosis(
                    FatalLLMError,
                    f"no API key: set {self._key_hint()} (a local server that needs no key "
                    "takes any value)",
                )
            )
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
            stream = await self._client.chat.completions.create(**arguments)
        except openai.OpenAIError as exc:
            raise self._fail(self._diagnose(exc, started=False)) from None
        reply = _Reply()
        try:
            async with stream:
                async for chunk in stream:
                    reply.add(chunk, sink)
        except openai.OpenAIError as exc:
            raise self._fail(self._diagnose(exc, started=True)) from None
        except (httpx2.HTTPError, ValueError, OSError) as exc:
            raise self._fail(
                connection_diagnosis(exc, started=True, timeouts=self._config.timeouts)
            ) from None
        if reply.finish is None:
            raise self._fail(
                Diagnosis(
                    TransientLLMError,
                    "the stream ended before the reply was finished (no finish_reason)",
                )
            )
        return reply.completion()

    def _diagnose(self, exc: openai.OpenAIError, *, started: bool) -> Diagnosis:
        if isinstance(exc, openai.APIStatusError):
            return self._status(exc.status_code, exc.body, exc.message)
        if isinstance(exc, openai.APIConnectionError):
            return connection_diagnosis(exc, started=started, timeouts=self._config.timeouts)
        if isinstance(exc, openai.APIError):
            # An error the server sent as a chunk of a stream that had begun.
            return self._status(200, exc.body, exc.message)
        return Diagnosis(TransientLLMError, f"{type(exc).__name__}: {exc}")

    def _status(self, status: int, body: object, fallback: str) -> Diagnosis:
        # OpenAI's body is the ``error`` object itself; compatible servers vary.
        inner = body.get("error", body) if isinstance(body, dict) else body
        kind = None
        if isinstance(inner, dict):
            kind = inner.get("code") or inner.get("type")
        return status_diagnosis(
            status,
            kind if isinstance(kind, str) else None,
            error_message(body, fallback),
            key_hint=self._key_hint(),
            model=self._config.model,
        )

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        config = self._config
        arguments: dict[str, Any] = {
            "model": config.model,
            "messages": [_message(m) for m in request.messages],
            "stream": True,
            "timeout": self._timeout,
        }
        if config.stream_usage:
            arguments["stream_options"] = {"include_usage": True}
        if request.tools:
            arguments["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
            choice = request.tool_choice
            if choice is ToolChoice.REQUIRED and not config.tool_choice_required:
                choice = ToolChoice.AUTO
            arguments["tool_choice"] = choice.value
        if config.temperature is not None:
            arguments["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            arguments["reasoning_effort"] = config.reasoning_effort.value
        limits = [n for n in (request.max_output_tokens, config.max_output_tokens) if n]
        if limits:
            arguments[config.max_tokens_param.value] = min(limits)
        headers: dict[str, str | openai.Omit] = dict(config.extra_headers)
        if self._key_status is KeyStatus.NOT_NEEDED:
            headers["Authorization"] = openai.omit
        if headers:
            arguments["extra_headers"] = headers
        if config.extra_body:
            arguments["extra_body"] = dict(config.extra_body)
        return arguments


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


@attrs.define
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = attrs.field(factory=list)


@attrs.define
class _Reply:
    """A reply assembled from its chunks."""

    text: list[str] = attrs.field(factory=list)
    calls: dict[int, _PartialCall] = attrs.field(factory=dict)
    usage: Usage = attrs.field(factory=Usage)
    finish: str | None = None
    model: str = ""

    def add(self, chunk: ChatCompletionChunk, sink: CompletionSink | None) -> None:
        if chunk.model and not self.model:
            self.model = chunk.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                self.text.append(delta.content)
                if sink is not None:
                    sink.text(delta.content)
            # vLLM, SGLang, DeepSeek and OpenRouter stream reasoning under one of these.
            reasoning = getattr(delta, "reasoning_content", None) or getattr(
                delta, "reasoning", None
            )
            if isinstance(reasoning, str) and reasoning and sink is not None:
                sink.reasoning(reasoning)
            for call in delta.tool_calls or ():
                self._add_call(call, sink)
            if choice.finish_reason:
                self.finish = choice.finish_reason

    def _add_call(self, call: Any, sink: CompletionSink | None) -> None:
        given = getattr(call, "index", None)
        index: int = given if given is not None else len(self.calls)
        partial = self.calls.setdefault(index, _PartialCall())
        if call.id:
            partial.id = call.id
        function = call.function
        if function is None:
            return
        # A name arrives once, or (on some servers) repeated in every delta.
        if function.name and function.name != partial.name:
            partial.name += function.name
        if function.arguments:
            partial.arguments.append(function.arguments)
            if sink is not None:
                sink.tool_arguments(index, partial.name, function.arguments)

    def completion(self) -> Completion:
        calls = tuple(
            ToolCall(
                id=partial.id or f"call_{index}",
                name=partial.name,
                arguments="".join(partial.arguments),
            )
            for index, partial in sorted(self.calls.items())
        )
        stop = _STOP_REASONS.get(self.finish or "", StopReason.OTHER)
        if stop is StopReason.END_TURN and calls:
            stop = StopReason.TOOL_USE
        return Completion(
            message=ChatMessage(role="assistant", content="".join(self.text), tool_calls=calls),
            usage=self.usage,
            stop_reason=stop,
            model=self.model,
        )


def _usage(usage: Any) -> Usage:
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=(prompt.cached_tokens or 0) if prompt is not None else 0,
        cache_write_tokens=(getattr(prompt, "cache_write_tokens", None) or 0)
        if prompt is not None
        else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion is not None else 0,
    )
