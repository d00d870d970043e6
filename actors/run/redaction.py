"""A run's secrets are removed where content enters the run, not where it leaves.

Text reaches a run from outside in two places only: what its agents' tools return (every
tool: the built-in ones, the shell, MCP servers) and what their models return (replies,
tool-call arguments, streamed deltas, and errors, a 401's echoed key included). The run
builds every agent's backend and tools in one place each (``actors.run.driver`` and
``actors.run.services``), and wraps them there: :class:`RedactingBackend` and
:class:`RedactingTools` pass all of it through the run's :class:`Redactor` before any other
part of the run sees it.

Why here rather than at the writers: everything the run writes (the event log, transcripts,
stream-json, the JSON result, the server's frames, error lines) is made from content that
came in through these two doors, so no writer, present or future, can forget the redactor;
and the secret never reaches where no writer could take it back: a peer's prompt, another
provider's request, an answer written to a file. A key typed into the task by the user is
the user's and is not touched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from conclave.actors.llm.errors import LLMError
from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    ToolCall,
    ToolSchema,
)
from conclave.actors.llm.redaction import Redactor
from conclave.actors.tools.protocol import ToolExecutor, ToolResult
from conclave.config.run_secrets import RunSecrets, run_secrets
from conclave.config.schema import ConclaveConfig
from conclave.config.secret import secrets_in_use

__all__ = [
    "RedactingBackend",
    "RedactingTools",
    "redacting_backend",
    "redacting_tools",
    "secrets_of_run",
]


def secrets_of_run(
    config: ConclaveConfig, environ: Mapping[str, str] = os.environ
) -> tuple[RunSecrets, Redactor]:
    """The run's secrets (for its sandboxes), and the redactor of those and of every other
    key this process holds as a :class:`~config.secret.Secret`."""
    secrets = run_secrets(config, environ)
    return secrets, Redactor(secrets.values | secrets_in_use())


def redacting_backend(backend: LLMBackend, redactor: Redactor) -> LLMBackend:
    """``backend``, its output redacted; itself when there is nothing to redact."""
    return RedactingBackend(backend, redactor) if redactor.active else backend


def redacting_tools(tools: ToolExecutor, redactor: Redactor) -> ToolExecutor:
    """``tools``, their results redacted; themselves when there is nothing to redact."""
    return RedactingTools(tools, redactor) if redactor.active else tools


class RedactingBackend:
    """An agent's backend whose replies, streamed deltas and errors are redacted. An error a
    backend raises keeps its class (the loop classifies it by class); any other exception
    becomes an ``LLMError`` naming its type, as the agent's own guard would make it.
    Cancellation passes through untouched."""

    def __init__(self, inner: LLMBackend, redactor: Redactor) -> None:
        self._inner = inner
        self._redact = redactor

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        redact = self._redact
        sink = _RedactingSink(sink, redact) if sink is not None else None
        try:
            completion = await self._inner.complete(request, sink=sink)
        except LLMError as exc:
            exc.args = (redact(str(exc)),)
            raise
        except Exception as exc:
            raise LLMError(redact(f"{type(exc).__name__}: {exc}")) from None
        message = _redacted_message(completion.message, redact)
        return (
            completion
            if message is completion.message
            else attrs.evolve(completion, message=message)
        )


def _redacted_message(message: ChatMessage, redact: Redactor) -> ChatMessage:
    """``message`` with its text and tool calls redacted (itself if nothing changed). Its
    ``provider_state`` is kept as the provider signed it: changed, the provider would refuse
    the next request (a model can only write a key it was shown, and none is shown)."""
    content = redact(message.content)
    calls = tuple(_redacted_call(call, redact) for call in message.tool_calls)
    same = all(a is b for a, b in zip(calls, message.tool_calls, strict=True))
    if content == message.content and same:
        return message
    return attrs.evolve(message, content=content, tool_calls=calls)


def _redacted_call(call: ToolCall, redact: Redactor) -> ToolCall:
    name, arguments = redact(call.name), redact(call.arguments)
    if name == call.name and arguments == call.arguments:
        return call
    return attrs.evolve(call, name=name, arguments=arguments)


class _RedactingSink:
    """Streamed deltas, each redacted. A secret split across two deltas is not recognised in
    either; the completed reply, redacted whole, is what the transcript keeps."""

    def __init__(self, inner: CompletionSink, redactor: Redactor) -> None:
        self._inner = inner
        self._redact = redactor

    def text(self, delta: str) -> None:
        self._inner.text(self._redact(delta))

    def reasoning(self, delta: str) -> None:
        self._inner.reasoning(self._redact(delta))

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        self._inner.tool_arguments(index, self._redact(name), self._redact(delta))

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        self._inner.retry(attempt, status, delay, self._redact(error))


class RedactingTools:
    """An agent's tools whose results are redacted (output and error), whichever tool ran.
    A tool that raises, which executors promise not to, becomes an error result here,
    redacted too."""

    def __init__(self, inner: ToolExecutor, redactor: Redactor) -> None:
        self._inner = inner
        self._redact = redactor

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._inner.schemas()

    def withheld(self) -> tuple[ToolSchema, ...]:
        return self._inner.withheld()

    async def execute(self, call: ToolCall) -> ToolResult:
        redact = self._redact
        try:
            result = await self._inner.execute(call)
        except Exception as exc:
            failure = f"the tool {call.name} failed: {type(exc).__name__}: {exc}"
            return ToolResult(ok=False, error=redact(failure))
        output = redact(result.output)
        error: str | None = redact(result.error) if result.error is not None else None
        if output == result.output and error == result.error:
            return result
        return attrs.evolve(result, output=output, error=error)
