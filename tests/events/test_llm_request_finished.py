"""What ``llm_request_finished`` says about a call: the model, why the reply ended, cached and
reasoning tokens, and a failure's error with every key redacted; logs written before these
fields existed still load, and the run's usage counts the cached tokens."""

from __future__ import annotations

import trio

from conclave.actors.agent.events import AgentStatusChanged, LlmRequestFinished
from conclave.actors.llm.errors import TransientLLMError
from conclave.actors.llm.protocol import (
    CallOutcome,
    CallPurpose,
    Completion,
    CompletionRequest,
    CompletionSink,
    StopReason,
    Usage,
)
from conclave.actors.llm.redaction import REDACTED
from conclave.actors.run.usage import UsageTap
from conclave.config.schema import AgentConfig
from conclave.config.schema.endpoint import Price
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from conclave.runtime import Event, loads
from tests.agent.harness import AGENT, answer, open_agent

USAGE = Usage(
    input_tokens=1200,
    output_tokens=300,
    cache_read_tokens=1000,
    cache_write_tokens=150,
    reasoning_tokens=120,
)
KEY = "sk-proj-abcdefgh12345678"


class Answers:
    """Fails once with ``error`` if given, then answers as ``model`` with :data:`USAGE`."""

    def __init__(self, *, model: str = "gpt-test-1", error: Exception | None = None) -> None:
        self.model = model
        self.error = error

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        await trio.sleep(1.0)
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return Completion(
            message=answer(), usage=USAGE, stop_reason=StopReason.TOOL_USE, model=self.model
        )


async def _calls(backend: Answers) -> list[LlmRequestFinished]:
    async with open_agent(backend) as run:
        run.start()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")
    return [e for e in run.tap.events if isinstance(e, LlmRequestFinished)]


async def test_a_finished_call_names_the_model_that_answered_and_why_the_reply_ended(
    autojump_clock: object,
) -> None:
    [call] = await _calls(Answers(model="gpt-test-1"))

    assert (call.agent, call.outcome, call.model, call.stop_reason) == (
        AGENT,
        "ok",
        "gpt-test-1",
        "tool_use",
    )
    assert call.error is None


async def test_a_finished_call_carries_cached_and_reasoning_tokens(
    autojump_clock: object,
) -> None:
    [call] = await _calls(Answers())

    assert (call.input_tokens, call.output_tokens) == (1200, 300)
    assert (call.cache_read_tokens, call.cache_write_tokens, call.reasoning_tokens) == (
        1000,
        150,
        120,
    )


async def test_a_backend_that_names_no_model_gives_no_model(autojump_clock: object) -> None:
    [call] = await _calls(Answers(model=""))

    assert call.model is None


async def test_a_failed_call_carries_its_error_with_the_key_redacted(
    autojump_clock: object,
) -> None:
    error = TransientLLMError(f"401 from api.example.com: invalid key {KEY}")
    failed, succeeded = await _calls(Answers(error=error))

    assert failed.outcome == "error"
    assert failed.error is not None
    assert "401 from api.example.com" in failed.error
    assert KEY not in failed.error and REDACTED in failed.error
    assert (failed.model, failed.stop_reason, failed.input_tokens) == (None, None, 0)
    assert succeeded.error is None


def test_an_event_logged_before_the_new_fields_existed_still_loads() -> None:
    line = (
        '{"kind": "llm_request_finished", "at": 1.5, "agent": "a1", "purpose": "round", '
        '"outcome": "ok", "input_tokens": 10, "output_tokens": 5}'
    )

    event = loads(line, Event)

    assert isinstance(event, LlmRequestFinished)
    assert event == LlmRequestFinished(
        at=1.5,
        agent="a1",
        purpose=CallPurpose.ROUND,
        outcome=CallOutcome.OK,
        input_tokens=10,
        output_tokens=5,
    )
    assert (event.model, event.stop_reason, event.error) == (None, None, None)
    assert event.cache_read_tokens == event.cache_write_tokens == event.reasoning_tokens == 0


# ---------------------------------------------------------------------------- usage


def _priced(agent: str, price: Price) -> AgentConfig:
    backend = OpenAIBackendConfig(model="m", api_key=Secret("sk-test-key-0001"), price=price)
    return AgentConfig(id=agent, backend=backend)


def _finished(
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
) -> LlmRequestFinished:
    return LlmRequestFinished(
        at=0.0,
        agent="a",
        purpose=CallPurpose.ROUND,
        outcome=CallOutcome.OK,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
        cache_write_tokens=cache_write_tokens,
        reasoning_tokens=reasoning_tokens,
    )


def test_the_runs_usage_counts_cached_written_and_reasoning_tokens() -> None:
    tap = UsageTap([_priced("a", Price(input_per_mtok=2.0, output_per_mtok=10.0))])
    tap.record(_finished(input_tokens=1200, output_tokens=300, cache_read_tokens=1000))
    tap.record(_finished(cache_write_tokens=150, reasoning_tokens=120))

    usage = tap.usage().agents["a"]

    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (
        1000,
        150,
        120,
    )


def test_cached_prompt_tokens_cost_the_cached_price() -> None:
    price = Price(input_per_mtok=2.0, output_per_mtok=10.0, cached_input_per_mtok=0.5)
    tap = UsageTap([_priced("a", price)])
    tap.record(_finished(input_tokens=1_000_000, cache_read_tokens=800_000))

    # 200k fresh at $2/M plus 800k cached at $0.5/M.
    assert tap.usage().total.cost_usd == 0.8


def test_the_runs_usage_says_what_share_of_the_prompt_tokens_came_from_the_cache() -> None:
    tap = UsageTap([_priced("a", Price(input_per_mtok=2.0, output_per_mtok=10.0))])
    tap.record(_finished(input_tokens=1200, cache_read_tokens=1000))
    tap.record(_finished(input_tokens=1800, cache_read_tokens=1250))

    assert tap.usage().total.cached_share == 0.75
    assert UsageTap([]).usage().total.cached_share is None  # no prompt tokens: no share
