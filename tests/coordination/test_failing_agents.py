"""Agents whose calls keep failing do not hold the run: once every other agent is done, they
have ``failing_agent_grace`` seconds to succeed, then the run goes on without them (excluded,
saying why); one that succeeds within it stays. What counts as done is the coordinator's
state: a standing vote, or an answer while voting is skipped or deferred."""

from __future__ import annotations

from typing import Any

import pytest

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.coordination.events import AgentExcluded
from conclave.actors.coordination.state import CoordinationState
from conclave.config.schema import ConclaveConfig, Misbehaviour, OrchestratorConfig
from tests.coordination.helpers import agent, config, run_tapped


def _panel(**orchestrator: Any) -> ConclaveConfig:
    """Two agents that answer and vote, and one whose every call hangs to ``call_timeout``."""
    return config(
        agent("a", seed=1, latency=0.2),
        agent("b", seed=2, latency=0.2),
        agent("dead", seed=3, latency=0.2, misbehave=Misbehaviour.HANG),
        call_timeout=20.0,
        **orchestrator,
    )


async def test_an_agent_that_keeps_failing_is_excluded_a_grace_after_the_others_are_done(
    autojump_clock: object,
) -> None:
    run = await run_tapped(_panel(failing_agent_grace=15.0))

    [first] = [e for e in run.events(LlmRequestFinished) if e.agent == "dead"][:1]
    assert first.at == pytest.approx(20.0)  # its first try fails: now it is failing
    [excluded] = run.events(AgentExcluded)
    assert excluded.agent == "dead"
    assert excluded.at == pytest.approx(35.0)
    assert "failing_agent_grace" in excluded.reason
    assert "did not answer within 20s" in excluded.reason
    assert run.result.termination == "completed"
    assert list(run.result.failed_agents) == ["dead"]
    assert run.result.winner in ("a", "b")


async def test_with_voting_deferred_the_others_vote_once_the_failing_agent_is_gone(
    autojump_clock: object,
) -> None:
    run = await run_tapped(_panel(failing_agent_grace=15.0, defer_voting_until_all_answered=True))

    [excluded] = run.events(AgentExcluded)
    assert (excluded.agent, excluded.at) == ("dead", pytest.approx(35.0))
    assert run.result.termination == "completed"
    assert set(run.result.votes) == {"a", "b"}


async def test_without_a_grace_a_failing_agent_keeps_all_its_tries(
    autojump_clock: object,
) -> None:
    run = await run_tapped(_panel(failing_agent_grace=None))

    [excluded] = run.events(AgentExcluded)
    assert excluded.agent == "dead"
    assert excluded.at >= 60.0  # three tries of 20 s and the waits between them
    assert excluded.reason.startswith("3 tries failed")


async def test_an_agent_that_recovers_within_the_grace_stays(autojump_clock: object) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.2),
            agent("b", seed=2, latency=0.2),
            agent("slow", seed=3, latency=0.2, misbehave=Misbehaviour.HANG, misbehave_calls=1),
            call_timeout=20.0,
            failing_agent_grace=15.0,
        )
    )

    assert run.events(AgentExcluded) == []
    assert run.result.failed_agents == {}
    assert run.answers_added("slow")


def _state(**orchestrator: Any) -> CoordinationState:
    return CoordinationState(
        task="t", agents=["a", "b", "c"], orchestrator=OrchestratorConfig(**orchestrator)
    )


def test_no_agent_is_a_straggler_while_another_still_works() -> None:
    state = _state()
    state.submit_answer("a", "one", shown=())
    state.failing["c"] = "down"
    assert state.stragglers() == ()  # b has not answered yet


def test_failing_agents_are_stragglers_once_every_other_vote_stands() -> None:
    state = _state()
    state.submit_answer("a", "one", shown=())
    state.submit_answer("b", "two", shown=())
    state.submit_vote("a", "agent1", "best", seen=2)
    state.submit_vote("b", "agent1", "best", seen=2)
    state.failing["c"] = "down"
    assert state.stragglers() == ("c",)


def test_with_voting_deferred_an_answer_is_enough_to_be_done() -> None:
    state = _state(defer_voting_until_all_answered=True)
    state.submit_answer("a", "one", shown=())
    state.submit_answer("b", "two", shown=())
    state.failing["c"] = "down"
    assert state.stragglers() == ("c",)


def test_an_agent_failing_alone_is_no_straggler() -> None:
    state = _state()
    state.fail("a", "bad key")
    state.fail("b", "bad key")
    state.failing["c"] = "down"
    assert state.stragglers() == ()
