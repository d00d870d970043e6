"""What a run's calls used and cost: per agent and in total, from the ``llm_request_finished``
events, priced by each backend's ``price``; and ``max_cost_usd``, which halts a run like a
timeout once its priced calls reach the budget."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.llm.protocol import CallOutcome, CallPurpose
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import DecidedBy, Termination
from conclave.actors.run.usage import AgentUsage, UsageTap
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.endpoint import Price
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from tests.coordination.helpers import TASK, agents, config, run_tapped

PRICE = Price(input_per_mtok=2.0, output_per_mtok=10.0)


def priced(agent_id: str, price: Price | None = PRICE) -> AgentConfig:
    """An agent whose config names a priced model (its calls are scripted in these tests)."""
    backend = OpenAIBackendConfig(model="m", api_key=Secret("sk-test-key"), price=price)
    return AgentConfig(id=agent_id, backend=backend)


def finished(
    agent: str, *, outcome: CallOutcome = CallOutcome.OK, inp: int = 1000, out: int = 100
) -> Any:
    return LlmRequestFinished(
        at=0.0,
        agent=agent,
        purpose=CallPurpose.ROUND,
        outcome=outcome,
        input_tokens=inp,
        output_tokens=out,
    )


# ---------------------------------------------------------------------------- the tap


def test_a_call_whose_server_reported_no_usage_makes_the_tokens_and_cost_unknown() -> None:
    tap = UsageTap([priced("a"), priced("b")])
    tap.record(finished("a"))
    tap.record(attrs.evolve(finished("a", inp=0, out=0), usage_reported=False))
    tap.record(finished("b"))

    usage = tap.usage()
    unknown = AgentUsage(
        input_tokens=None,
        output_tokens=None,
        cache_read_tokens=None,
        cache_write_tokens=None,
        reasoning_tokens=None,
        calls=2,
        calls_without_usage=1,
        cost_usd=None,
    )
    assert usage.agents["a"] == unknown
    assert usage.agents["b"].input_tokens == 1000
    assert usage.agents["b"].cost_usd is not None
    assert usage.total == attrs.evolve(unknown, calls=3)


def test_usage_is_summed_per_agent_and_in_total() -> None:
    tap = UsageTap([priced("a"), priced("b")])
    for event in (finished("a"), finished("a", inp=500, out=50), finished("b")):
        tap.record(event)

    usage = tap.usage()

    assert usage.agents["a"].input_tokens == 1500
    assert usage.agents["a"].output_tokens == 150
    assert usage.agents["a"].calls == 2
    assert usage.total.input_tokens == 2500
    assert usage.total.calls == 3


def test_calls_that_returned_no_reply_are_not_counted() -> None:
    tap = UsageTap([priced("a")])
    for outcome in (CallOutcome.ERROR, CallOutcome.TIMEOUT, CallOutcome.CANCELLED):
        tap.record(finished("a", outcome=outcome))

    assert tap.usage().total == AgentUsage()


def test_a_priced_agents_cost_is_its_tokens_at_its_price() -> None:
    tap = UsageTap([priced("a")])
    tap.record(finished("a", inp=1_000_000, out=100_000))

    assert tap.usage().agents["a"].cost_usd == pytest.approx(2.0 + 1.0)
    assert tap.usage().total.cost_usd == pytest.approx(3.0)


def test_an_agent_without_a_price_makes_the_total_cost_unknown() -> None:
    tap = UsageTap([priced("a"), priced("free", price=None)])
    tap.record(finished("a"))
    tap.record(finished("free"))

    usage = tap.usage()

    assert usage.agents["free"].cost_usd is None
    assert usage.agents["a"].cost_usd is not None
    assert usage.total.cost_usd is None


def test_reaching_the_budget_is_said_once() -> None:
    said: list[None] = []
    tap = UsageTap([priced("a")], budget_usd=0.004)
    tap.on_budget_reached = lambda: said.append(None)

    tap.record(finished("a"))  # $0.003
    assert said == []
    tap.record(finished("a"))  # $0.006
    tap.record(finished("a"))

    assert said == [None]


def test_a_priced_call_without_usage_counts_against_the_budget_at_its_estimate() -> None:
    said: list[None] = []
    tap = UsageTap([priced("a")], budget_usd=0.004)
    tap.on_budget_reached = lambda: said.append(None)
    unreported = attrs.evolve(
        finished("a", inp=0, out=0),
        usage_reported=False,
        estimated_input_tokens=1000,
        estimated_output_tokens=100,
    )

    tap.record(unreported)  # $0.003 at the estimate
    assert said == []
    tap.record(unreported)  # $0.006

    assert said == [None]
    assert tap.ledger.estimated_calls == 2
    assert tap.usage().total.cost_usd is None  # the result still says unknown


# ---------------------------------------------------------------------------- runs


async def test_a_runs_result_carries_its_usage_per_agent(autojump_clock: object) -> None:
    run = await run_tapped(config(*agents(3, latency=1.0)))
    result = run.result

    assert set(result.usage.agents) == {"a1", "a2", "a3"}
    assert result.usage.total.calls == result.llm_completed
    assert result.usage.total.input_tokens == result.input_tokens
    assert result.usage.total.output_tokens == result.output_tokens


async def test_a_scripted_run_has_no_cost(autojump_clock: object) -> None:
    run = await run_tapped(config(*agents(2, latency=1.0)))

    assert run.result.cost_usd is None
    assert run.result.usage.total.cost_usd is None


def _scripted_as_priced(latencies: dict[str, float]) -> tuple[ConclaveConfig, Any]:
    """Priced agents (their configs name a model with a price) whose calls are scripted."""
    members = tuple(priced(agent_id) for agent_id in latencies)

    def backend(member: AgentConfig) -> ScriptedBackend:
        policy = ScriptedBackendConfig(seed=len(member.id), latency=latencies[member.id])
        return ScriptedBackend(agent_id=member.id, persona="", policy=policy, seed=policy.seed)

    return ConclaveConfig(agents=members, orchestrator=OrchestratorConfig()), backend


async def test_a_priced_runs_cost_is_its_tokens_at_the_agents_prices(
    autojump_clock: object,
) -> None:
    cfg, backends = _scripted_as_priced({"a": 1.0, "b": 2.0})

    result = await run(RunSpec(task=TASK, config=cfg, backend_factory=backends))

    usage = result.usage.total
    assert usage.input_tokens is not None and usage.output_tokens is not None
    expected = (usage.input_tokens * 2.0 + usage.output_tokens * 10.0) / 1_000_000
    assert result.cost_usd == pytest.approx(expected)


async def test_a_run_that_reaches_its_cost_budget_halts_like_a_timeout(
    autojump_clock: object,
) -> None:
    cfg, backends = _scripted_as_priced({"a": 1.0, "b": 2.0, "c": 60.0})
    # A scripted call costs about $0.001 at PRICE: a's call at 1 s stays under the budget,
    # b's at 2 s reaches it; c, which would answer at 60 s, never does.
    run_ = await run_tapped(cfg, backend_factory=backends, max_cost_usd=0.0015)
    result = run_.result

    assert result.termination is Termination.MAX_COST
    assert result.decided_by is DecidedBy.MAX_COST_BEST_SO_FAR
    assert "a" in [answer.agent for answer in result.answers]
    assert "c" not in [answer.agent for answer in result.answers]
    assert result.final_answer is not None
    assert result.cost_usd is not None and result.cost_usd >= 0.0015
    [ended] = run_.events(RunEnded)
    assert ended.at == 2.0


async def test_a_cost_budget_never_reached_lets_the_run_complete(autojump_clock: object) -> None:
    cfg, backends = _scripted_as_priced({"a": 1.0, "b": 2.0})

    run_ = await run_tapped(cfg, backend_factory=backends, max_cost_usd=100.0)

    assert run_.result.termination is Termination.COMPLETED
    assert run_.events(AnswerAdded)


def test_a_cost_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_cost_usd must be a number of dollars > 0"):
        RunSpec(task=TASK, config=config(*agents(1)), max_cost_usd=0)


def test_a_run_whose_agents_have_no_price_has_no_cost_even_without_calls() -> None:
    tap = UsageTap([AgentConfig(id="a", backend=ScriptedBackendConfig())])

    assert tap.usage().total.cost_usd is None


def test_a_priced_run_without_calls_cost_nothing() -> None:
    tap = UsageTap([priced("a")])

    assert tap.usage().total.cost_usd == 0.0
