"""The ``openai`` backend: any OpenAI-compatible Chat Completions endpoint (Azure OpenAI
too), over ``httpx2`` (:mod:`actors.llm.chat_wire`, which says why not the official SDK).

Imported only when a config names an ``openai`` agent (the pool's provider table).

Every call streams, and the reply is assembled by hand from the raw chunks (plain dicts),
per tool-call index: the raw chunks are what compatible servers agree on. Tool-call
arguments are passed on exactly as the model wrote them, valid JSON or not: judging them is
the workflow parser's job. Usage arrives (with ``stream_options.include_usage``) in a last
chunk whose ``choices`` is empty.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import Any

import attrs
import httpx2

from conclave.actors.llm.chat_wire import (
    OMIT,
    ChatClient,
    ChatConnectionError,
    ChatError,
    ChatStatusError,
    ChatStream,
    ChatStreamError,
)
from conclave.actors.llm.http1 import proxy_configured
from conclave.actors.llm.http_errors import Diagnosis
from conclave.actors.llm.http_hooks import preload_transport, tls_context
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
from conclave.config.schema import AgentConfig
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret

__all__ = ["OPENAI_URL", "PROVIDER", "OpenAIBackend", "OpenAIProvider"]

if proxy_configured(os.environ):
    preload_transport()  # requests will go through httpx2 (see OpenAIProvider._client)

OPENAI_URL = "https://api.openai.com/v1"

_STOP_REASONS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


_IDENTITY = {"OPENAI_ORG_ID": "OpenAI-Organization", "OPENAI_PROJECT_ID": "OpenAI-Project"}
"""Environment variables the SDK read into headers: variable → header."""
_SENT_APART = ("timeout", "extra_headers", "extra_body")
"""Arguments that are not the request's body (``extra_body`` is merged into it)."""


class OpenAIBackend(SdkBackend[OpenAIBackendConfig, ChatClient]):
    """One agent's view of an OpenAI-compatible endpoint (see :class:`SdkBackend`)."""

    SDK_ERROR = ChatError
    CONNECTION_ERROR = ChatConnectionError
    OMIT = OMIT
    STREAM_END = "finish_reason"
    PROTOCOL = "the Chat Completions protocol"
    NO_KEY_ADVICE = " (a local server that needs no key takes any value)"

    required_refused: bool = False
    """The server refused ``tool_choice: required`` once: from then on this agent sends
    ``auto`` (the prompt still asks for the call), as ``tool_choice_required: false`` does."""

    async def _open_stream(self, arguments: dict[str, Any]) -> SdkStream:
        try:
            return await self._send(arguments)
        except ChatStatusError as exc:
            if (
                exc.status_code != 400
                or arguments.get("tool_choice") != ToolChoice.REQUIRED.value
                or not _refuses_choice(exc)
            ):
                raise
            # An older or smaller server that lacks it: the round still works with auto.
            self.required_refused = True
            return await self._send({**arguments, "tool_choice": ToolChoice.AUTO.value})

    async def _send(self, arguments: dict[str, Any]) -> ChatStream:
        body = {k: v for k, v in arguments.items() if k not in _SENT_APART}
        body.update(arguments.get("extra_body") or {})
        return await self._client.open(
            body, headers=arguments.get("extra_headers") or {}, timeout=arguments["timeout"]
        )

    def _reply(self) -> StreamedReply:
        return _Reply()

    def _status_diagnosis(self, exc: Exception) -> Diagnosis | None:
        if isinstance(exc, ChatStatusError):
            return self._openai_status(exc.status_code, exc.body, exc.message)
        if isinstance(exc, ChatStreamError):
            # An error the server sent as a chunk of a stream that had begun.
            return self._openai_status(200, exc.body, exc.message)
        return None

    def _openai_status(self, status: int, body: object, fallback: str) -> Diagnosis:
        # OpenAI's body is the ``error`` object itself; compatible servers vary.
        inner = body.get("error", body) if isinstance(body, dict) else body
        kind = None
        if isinstance(inner, dict):
            kind = inner.get("code") or inner.get("type")
        return self._status(status, kind if isinstance(kind, str) else None, body, fallback)

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
            if choice is ToolChoice.REQUIRED and (
                not config.tool_choice_required or self.required_refused
            ):
                choice = ToolChoice.AUTO
            arguments["tool_choice"] = choice.value
        if config.temperature is not None:
            arguments["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            arguments["reasoning_effort"] = config.reasoning_effort.value
        limits = [n for n in (request.max_output_tokens, config.max_output_tokens) if n]
        if limits:
            arguments[config.max_tokens_param.value] = min(limits)
        if config.extra_body:
            arguments["extra_body"] = dict(config.extra_body)
        return arguments


class OpenAIProvider(SdkProvider[OpenAIBackendConfig, ChatClient]):
    """Agents on one server with one key (and, on Azure, one API version) share one client."""

    NAME = "openai"
    DEFAULT_URL = OPENAI_URL
    CONFIG = OpenAIBackendConfig
    BACKEND = OpenAIBackend

    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        return (super().endpoint_key(agent), self.config(agent).api_version)

    def _client(
        self,
        config: OpenAIBackendConfig,
        base_url: str,
        key: Secret | None,
        http: Callable[[], httpx2.AsyncClient],
    ) -> ChatClient:
        sent_key = key.reveal() if key is not None else None
        identity = self.identity()
        # Through httpx2 only when it has a proxy to honour (see actors.llm.http1).
        tls = None if proxy_configured(self._environ) else tls_context(base_url)
        if config.api_version is not None:
            return ChatClient.azure(
                endpoint=base_url,
                deployment=config.deployment or config.model,
                api_version=config.api_version,
                key=sent_key,
                http=http,
                identity=identity,
                tls=tls,
            )
        return ChatClient.openai(
            base_url=base_url, key=sent_key, http=http, identity=identity, tls=tls
        )

    def identity(self) -> dict[str, str]:
        """The organization and project headers, from ``OPENAI_ORG_ID`` and
        ``OPENAI_PROJECT_ID`` when set, as the SDK sent them."""
        return {
            header: self._environ[variable]
            for variable, header in _IDENTITY.items()
            if self._environ.get(variable)
        }


PROVIDER = OpenAIProvider()


def _refuses_choice(exc: ChatStatusError) -> bool:
    """Whether a 400 is about ``tool_choice`` (its ``param``, or its message names it)."""
    body = exc.body
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict) and inner.get("param") == "tool_choice":
        return True
    return "tool_choice" in exc.message


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
    usage: Usage | None = None
    """``None`` until a chunk reports usage: a server may report none."""
    finish: str | None = None
    model: str = ""

    @property
    def finished(self) -> bool:
        return self.finish is not None

    def add(self, chunk: dict[str, Any], sink: CompletionSink | None) -> None:
        if not self.model:
            model = chunk.get("model")
            if model:
                self.model = model
        usage = chunk.get("usage")
        if usage is not None:
            self.usage = _usage(usage)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            content = delta.get("content") if delta else None
            if content:
                self.text.append(content)
                if sink is not None:
                    sink.text(content)
            # Most of a stream is deltas of text alone: nothing else to look for in them.
            if delta and (content is None or len(delta) > 1):
                # vLLM, SGLang, DeepSeek and OpenRouter stream reasoning under one of these.
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning and sink is not None:
                    sink.reasoning(reasoning)
                for call in delta.get("tool_calls") or ():
                    self._add_call(call, sink)
            finish = choice.get("finish_reason")
            if finish:
                self.finish = finish

    def _add_call(self, call: dict[str, Any], sink: CompletionSink | None) -> None:
        given = call.get("index")
        index: int = given if given is not None else len(self.calls)
        partial = self.calls.setdefault(index, _PartialCall())
        if call.get("id"):
            partial.id = call["id"]
        function = call.get("function")
        if function is None:
            return
        # A name arrives once, or (on some servers) repeated in every delta.
        name = function.get("name")
        if name and name != partial.name:
            partial.name += name
        arguments = function.get("arguments")
        if arguments:
            partial.arguments.append(arguments)
            if sink is not None:
                sink.tool_arguments(index, partial.name, arguments)

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


def _usage(usage: dict[str, Any]) -> Usage:
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cache_read_tokens=prompt.get("cached_tokens") or 0,
        cache_write_tokens=prompt.get("cache_write_tokens") or 0,
        reasoning_tokens=completion.get("reasoning_tokens") or 0,
    )
