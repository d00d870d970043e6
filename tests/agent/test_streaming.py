"""What a round shows people while it runs: streamed text as TextDelta events (at most one
per agent per 50 ms, however finely the backend streams), retries as LlmRetry events, and
the agent's tool calls as ToolCallStarted/ToolCallFinished."""

from __future__ import annotations

import itertools

import trio

from conclave.actors.agent.events import AgentStatusChanged
from conclave.actors.agent.telemetry import DELTA_INTERVAL
from conclave.actors.events.loop import LlmRetry, TextDelta, ToolCallFinished, ToolCallStarted
from conclave.actors.llm.protocol import (
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    ToolCall,
    Usage,
)
from conclave.actors.tools.protocol import NO_TOOLS, ToolExecutor, ToolResult
from conclave.runtime import Event
from tests.agent.harness import AGENT, FakeBackend, SlowTools, answer, call, open_agent

CHUNKS = [f"word{i} " for i in range(40)]


class Streaming:
    """Streams ``CHUNKS`` 10 ms apart (a retry notice first), then answers."""

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        assert sink is not None
        sink.retry(1, 429, 2.0, "rate-limited")
        for chunk in CHUNKS:
            await trio.sleep(0.01)
            sink.text(chunk)
        await trio.sleep(1.0)
        return Completion(message=answer(), usage=Usage())


async def _answered(backend: LLMBackend, tools: ToolExecutor = NO_TOOLS) -> list[Event]:
    """Every event of a first round, up to the agent's answer."""
    async with open_agent(backend, tools=tools) as run:
        run.start()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")
    return list(run.tap.events)


async def test_streamed_text_arrives_as_deltas_at_most_one_per_interval(
    autojump_clock: object,
) -> None:
    events = await _answered(Streaming())

    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == "".join(CHUNKS)
    assert all(d.agent == AGENT for d in deltas)
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(deltas)]
    assert all(gap >= DELTA_INTERVAL - 1e-9 for gap in gaps)
    assert len(deltas) < len(CHUNKS) / 4


async def test_a_retry_the_backend_reports_is_an_llm_retry_event(autojump_clock: object) -> None:
    events = await _answered(Streaming())

    [retry] = [e for e in events if isinstance(e, LlmRetry)]
    assert (retry.agent, retry.attempt, retry.status, retry.delay) == (AGENT, 1, 429, 2.0)


async def test_each_tool_call_of_a_round_is_recorded_as_it_starts_and_finishes(
    autojump_clock: object,
) -> None:
    tools = SlowTools(seconds=2.0)
    events = await _answered(FakeBackend([call("read", "r1", path="a.txt"), answer()]), tools=tools)

    [started] = [e for e in events if isinstance(e, ToolCallStarted)]
    [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert (started.tool, started.call_id, started.arguments) == ("read", "r1", '{"path": "a.txt"}')
    assert (finished.call_id, finished.ok, finished.duration) == ("r1", True, 2.0)
    assert finished.output == 'contents of {"path": "a.txt"}'
    assert finished.at == started.at + 2.0


class _Broken(SlowTools):
    async def execute(self, call: ToolCall) -> ToolResult:
        raise OSError("disk on fire")


async def test_a_tool_that_raises_is_an_error_for_the_model_and_a_failed_call_for_people(
    autojump_clock: object,
) -> None:
    backend = FakeBackend([call("read", "r1", path="a.txt"), answer()])
    events = await _answered(backend, tools=_Broken())

    [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
    error = "the tool read failed: OSError: disk on fire"
    assert (finished.ok, finished.error, finished.output) == (False, error, f"Error: {error}")
    [result] = [m for m in backend.requests[1].messages if m.role == "tool"]
    assert result.content == f"Error: {error}"


class _Refusing(SlowTools):
    async def execute(self, call: ToolCall) -> ToolResult:
        return ToolResult(ok=False, refused=True, error="the path '/etc' is outside the grants")


async def test_a_refused_call_is_recorded_as_refused_with_why(autojump_clock: object) -> None:
    backend = FakeBackend([call("read", "r1", path="/etc"), answer()])
    events = await _answered(backend, tools=_Refusing())

    [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert (finished.ok, finished.refused) == (False, True)
    assert finished.error == "the path '/etc' is outside the grants"
