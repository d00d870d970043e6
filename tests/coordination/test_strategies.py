"""The final answer by strategy, and what each costs in LLM calls for N = 3 agents that
answer once and vote once (2N calls): ``winner_reuse`` adds none, ``winner_present`` and
``synthesize`` add one presentation call."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from conclave.actors.agent.events import LlmRequestStarted
from conclave.actors.coordination.events import FinalAnswerProduced
from conclave.config.modes import ModeState, apply_modes
from conclave.config.schema import ConclaveConfig, FinalAnswerStrategy
from tests.coordination.helpers import agents, config, run_tapped

N = 3


def _with_strategy(cfg: ConclaveConfig, strategy: FinalAnswerStrategy) -> ConclaveConfig:
    return attrs.evolve(
        cfg, orchestrator=attrs.evolve(cfg.orchestrator, final_answer_strategy=strategy)
    )


def _refinement_off(strategy: FinalAnswerStrategy) -> ConclaveConfig:
    base = apply_modes(config(*agents(N, latency=0.2, jitter=0.5)), ModeState(refinement=False))
    return _with_strategy(base, strategy)


def _answer_once(strategy: FinalAnswerStrategy) -> ConclaveConfig:
    """Refinement on, but every scripted agent answers once (``answers=1``) then votes."""
    return config(*agents(N, latency=0.2, answers=1), final_answer_strategy=strategy)


EXPECTED_CALLS = {
    FinalAnswerStrategy.WINNER_REUSE: 2 * N,
    FinalAnswerStrategy.WINNER_PRESENT: 2 * N + 1,
    FinalAnswerStrategy.SYNTHESIZE: 2 * N + 1,
}


@pytest.mark.parametrize("strategy", list(FinalAnswerStrategy), ids=lambda s: s.value)
@pytest.mark.parametrize(
    "build", [_refinement_off, _answer_once], ids=["refinement-off", "answers-1"]
)
async def test_llm_calls_per_strategy_for_three_agents(
    autojump_clock: object,
    strategy: FinalAnswerStrategy,
    build: Callable[[FinalAnswerStrategy], ConclaveConfig],
) -> None:
    run = await run_tapped(build(strategy))

    assert run.result.termination == "completed"
    assert run.result.restarts == 0
    assert run.result.llm_calls == EXPECTED_CALLS[strategy]
    presentations = [e for e in run.events(LlmRequestStarted) if e.purpose == "present"]
    assert len(presentations) == EXPECTED_CALLS[strategy] - 2 * N
    assert run.result.strategy == strategy.value


async def test_winner_reuse_returns_the_winners_answer_verbatim(autojump_clock: object) -> None:
    run = await run_tapped(_refinement_off(FinalAnswerStrategy.WINNER_REUSE))

    assert run.result.final_answer == run.answer_of(run.result.winner or "")
    [final] = run.events(FinalAnswerProduced)
    assert final.strategy is FinalAnswerStrategy.WINNER_REUSE


async def test_winner_present_is_one_call_by_the_winner_based_on_its_own_answer(
    autojump_clock: object,
) -> None:
    run = await run_tapped(_refinement_off(FinalAnswerStrategy.WINNER_PRESENT))

    winner = run.result.winner
    [presentation] = [e for e in run.events(LlmRequestStarted) if e.purpose == "present"]
    assert presentation.agent == winner
    assert run.result.presenter == winner
    assert run.answer_of(winner or "") in (run.result.final_answer or "")


async def test_synthesize_merges_every_answer_and_names_the_other_labels(
    autojump_clock: object,
) -> None:
    run = await run_tapped(_refinement_off(FinalAnswerStrategy.SYNTHESIZE))

    winner = run.result.winner
    final = run.result.final_answer or ""
    assert run.result.presenter == winner
    others = [a.label for a in run.result.answers if a.agent != winner]
    assert len(others) == N - 1
    assert all(label in final for label in others)
    assert run.answer_of(winner or "") in final


async def test_the_refinement_off_mode_synthesizes_by_default(autojump_clock: object) -> None:
    cfg = apply_modes(config(*agents(N, latency=0.2)), ModeState(refinement=False))

    run = await run_tapped(cfg)

    assert run.result.strategy == "synthesize"
    assert run.result.llm_calls == 2 * N + 1


async def test_the_default_strategy_is_winner_present(autojump_clock: object) -> None:
    run = await run_tapped(config(*agents(N, latency=0.2)))

    assert run.result.strategy == "winner_present"
