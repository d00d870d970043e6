"""The first-vote wait (a headline default): an agent's first "you may vote now" waits for
the first answers of the agents still answering, bounded by ``first_vote_wait`` seconds from
the run's first answer. Answers spread out by more than the quiet period (HTTP, models of
different speed) then cost one vote per agent instead of a vote re-run per late answer."""

from __future__ import annotations

import pytest

from conclave.actors.coordination.events import VotesCleared
from conclave.actors.coordination.protocol import VotingOpen
from conclave.config.loader import parse_config
from conclave.config.schema import OrchestratorConfig
from tests.coordination.helpers import agent, config, run_tapped

# Three answers half a second apart: each gap is longer than the quiet period.
SPREAD = (
    agent("a", seed=1, latency=1.0),
    agent("b", seed=2, latency=1.5),
    agent("c", seed=3, latency=2.0),
)


async def test_answers_spread_past_the_quiet_period_cost_one_answer_and_one_vote_per_agent(
    autojump_clock: object,
) -> None:
    run = await run_tapped(config(*SPREAD, quiet_period=0.1))

    assert run.result.llm_calls == 2 * 3 + 1
    assert run.result.restarts == 0
    assert not [e for e in run.events(VotesCleared) if e.voters]


async def test_without_the_wait_each_late_answer_re_runs_the_early_votes(
    autojump_clock: object,
) -> None:
    run = await run_tapped(config(*SPREAD, quiet_period=0.1, first_vote_wait=None))

    assert run.result.restarts == 2
    assert run.result.llm_calls == 2 * 3 + 1 + 2


async def test_the_first_answerer_may_vote_once_the_last_first_answer_is_in_and_quiet(
    autojump_clock: object,
) -> None:
    run = await run_tapped(config(*SPREAD, quiet_period=0.1))

    [(opened, _)] = run.payloads(VotingOpen, to="a")
    last = run.answers_added("c")[0]
    assert opened.at == pytest.approx(last.at + 0.1)


async def test_the_wait_ends_after_first_vote_wait_seconds_from_the_first_answer(
    autojump_clock: object,
) -> None:
    slow = agent("b", seed=2, latency=10.0)
    run = await run_tapped(
        config(agent("a", seed=1, latency=0.5), slow, quiet_period=0.1, first_vote_wait=2.0)
    )

    first = run.answers_added("a")[0]
    opened = run.payloads(VotingOpen, to="a")[0][0]
    assert opened.at == pytest.approx(first.at + 2.0)
    assert opened.at < run.answers_added("b")[0].at


async def test_an_agent_excluded_before_answering_ends_the_wait(autojump_clock: object) -> None:
    failing = agent("b", seed=2, latency=1.0, error_rate=1.0)
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=1.0),
            failing,
            first_vote_wait=3000.0,
            failing_agent_grace=10.0,
            max_tries_per_round=100,
        )
    )

    assert "b" in run.result.failed_agents
    opened = run.payloads(VotingOpen, to="a")[0][0]
    assert opened.at < 100.0


async def test_a_lone_agent_votes_without_waiting(autojump_clock: object) -> None:
    run = await run_tapped(config(agent("a", seed=1, latency=1.0), quiet_period=None))

    [(opened, _)] = run.payloads(VotingOpen, to="a")
    assert opened.at == pytest.approx(run.answers_added("a")[0].at)


def test_a_config_that_names_no_first_vote_wait_waits_up_to_a_minute() -> None:
    unnamed = parse_config({"agents": [{"id": "a", "backend": {"type": "scripted"}}]})

    assert unnamed.orchestrator.first_vote_wait == 60.0
    assert OrchestratorConfig().first_vote_wait == 60.0
