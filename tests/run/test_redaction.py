"""A run's secrets are redacted where content enters the run: every tool result, and every
reply, streamed delta and error of a model, before anything else in the run sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.actors.llm.errors import FatalLLMError, LLMError
from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    ToolCall,
    ToolSchema,
)
from conclave.actors.llm.redaction import NO_REDACTION, REDACTED, Redactor
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.redaction import (
    RedactingBackend,
    RedactingTools,
    redacting_backend,
    redacting_tools,
)
from conclave.actors.run.result import Termination
from conclave.actors.tools.protocol import ToolResult
from conclave.config.schema import AgentConfig
from conclave.config.secret import Secret
from tests.coordination.helpers import TASK, agent, config

KEY = "zq-run-key-0123456789abcdef"
REDACT = Redactor([KEY])
REQUEST = CompletionRequest(messages=(ChatMessage(role="user", content="go"),))


class Replying:
    """A backend that streams and returns one fixed reply, or raises one error."""

    def __init__(self, reply: ChatMessage | None = None, error: Exception | None = None) -> None:
        self.reply = reply
        self.error = error

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        if sink is not None:
            sink.retry(1, 401, 0.5, f"the server refused {KEY}")
            sink.text(self.reply.content)
            for index, call in enumerate(self.reply.tool_calls):
                sink.tool_arguments(index, call.name, call.arguments)
        return Completion(message=self.reply)


class Deltas:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def text(self, delta: str) -> None:
        self.seen.append(delta)

    def reasoning(self, delta: str) -> None:
        self.seen.append(delta)

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        self.seen.append(delta)

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        self.seen.append(error)


async def test_a_replys_text_tool_calls_and_streamed_deltas_are_redacted() -> None:
    call = ToolCall(id="c1", name="run_shell", arguments=json.dumps({"command": f"echo {KEY}"}))
    reply = ChatMessage(role="assistant", content=f"the key: {KEY}", tool_calls=(call,))
    deltas = Deltas()

    completion = await RedactingBackend(Replying(reply), REDACT).complete(REQUEST, sink=deltas)

    assert completion.message.content == f"the key: {REDACTED}"
    assert json.loads(completion.message.tool_calls[0].arguments) == {"command": f"echo {REDACTED}"}
    assert deltas.seen == [
        f"the server refused {REDACTED}",
        f"the key: {REDACTED}",
        json.dumps({"command": f"echo {REDACTED}"}),
    ]


async def test_a_reply_without_secrets_is_returned_as_it_came() -> None:
    reply = ChatMessage(role="assistant", content="nothing to hide")

    completion = await RedactingBackend(Replying(reply), REDACT).complete(REQUEST)

    assert completion.message is reply


async def test_the_providers_signed_state_is_kept_as_signed() -> None:
    state = {"thinking": [{"signature": "sig", "thinking": f"saw {KEY}"}]}
    reply = ChatMessage(role="assistant", content=KEY, provider_state=state)

    completion = await RedactingBackend(Replying(reply), REDACT).complete(REQUEST)

    assert completion.message.content == REDACTED
    assert completion.message.provider_state == state


async def test_a_backend_error_keeps_its_class_and_loses_the_key() -> None:
    failing = Replying(error=FatalLLMError(f"401: Incorrect API key provided: {KEY}"))

    with pytest.raises(FatalLLMError) as raised:
        await RedactingBackend(failing, REDACT).complete(REQUEST)

    assert str(raised.value) == f"401: Incorrect API key provided: {REDACTED}"


async def test_any_other_exception_becomes_a_redacted_llm_error_naming_its_type() -> None:
    failing = Replying(error=RuntimeError(f"connect failed for https://h/?key={KEY}"))

    with pytest.raises(LLMError) as raised:
        await RedactingBackend(failing, REDACT).complete(REQUEST)

    assert str(raised.value) == f"RuntimeError: connect failed for https://h/?key={REDACTED}"


class Tools:
    """An executor that returns one fixed result, or raises."""

    def __init__(self, result: ToolResult | None = None) -> None:
        self.result = result

    def schemas(self) -> tuple[ToolSchema, ...]:
        return ()

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        if self.result is None:
            raise OSError(f"cannot open {KEY}.txt")
        return self.result


async def test_a_tool_results_output_and_error_are_redacted() -> None:
    result = ToolResult(ok=False, output=f"out {KEY}", error=f"exit 1:\n{KEY}\n")
    call = ToolCall(id="c1", name="run_shell", arguments="{}")

    redacted = await RedactingTools(Tools(result), REDACT).execute(call)

    assert (redacted.output, redacted.error) == (f"out {REDACTED}", f"exit 1:\n{REDACTED}\n")


async def test_a_tool_that_raises_becomes_a_redacted_error_result() -> None:
    call = ToolCall(id="c1", name="read_file", arguments="{}")

    result = await RedactingTools(Tools(), REDACT).execute(call)

    assert not result.ok
    assert result.error == f"the tool read_file failed: OSError: cannot open {REDACTED}.txt"


def test_without_secrets_nothing_is_wrapped() -> None:
    backend, tools = Replying(), Tools()

    assert redacting_backend(backend, NO_REDACTION) is backend
    assert redacting_tools(tools, NO_REDACTION) is tools


async def test_an_answer_a_model_writes_a_key_into_is_redacted_in_the_result_and_the_logs(
    tmp_path: Path, autojump_clock: object
) -> None:
    Secret(KEY)  # a key this process holds, as a resolved api_key_env makes it
    chatty = agent("a1", answer_text=f"use the key {KEY}")
    spec = RunSpec(task=TASK, config=config(chatty, agent("a2", seed=2)), log_dir=tmp_path / "r")

    result = await run(spec)

    assert result.final_answer is not None and KEY not in result.final_answer
    assert any(REDACTED in a.content for a in result.answers)
    for path in (tmp_path / "r").iterdir():
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8"), path.name


async def test_a_runs_failure_reason_is_redacted(tmp_path: Path, autojump_clock: object) -> None:
    Secret(KEY)

    def failing(agent: AgentConfig) -> LLMBackend:
        raise RuntimeError(f"cannot make a client with {KEY}")

    spec = RunSpec(task=TASK, config=config(agent("a1")), backend_factory=failing)

    result = await run(spec)

    assert result.termination is Termination.FAILED
    assert result.failure_reason is not None and REDACTED in result.failure_reason
    assert KEY not in result.failure_reason
