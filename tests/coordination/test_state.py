"""CoordinationState, the coordinator's pure state machine: whose votes a new answer
clears, and what excluding an agent does to its vote."""

from __future__ import annotations

from conclave.actors.coordination.state import CoordinationState, Exclusion, Phase
from conclave.config.schema import OrchestratorConfig


def state(*agents: str, visibility: str = "all") -> CoordinationState:
    return CoordinationState(
        task="t", agents=agents, orchestrator=OrchestratorConfig(visibility=visibility)
    )


def test_a_new_answer_clears_the_votes_of_the_agents_shown_it_and_no_others() -> None:
    s = state("a1", "a2", "a3", "a4", visibility="ring")
    s.submit_answer("a2", "two")
    s.submit_answer("a3", "three")
    for voter, target in (("a1", "agent2"), ("a2", "agent2"), ("a3", "agent2"), ("a4", "agent3")):
        s.submit_vote(voter, target, "why", seen=99)

    outcome = s.submit_answer("a1", "one")  # a1's neighbours in the ring: a4 and a2

    assert outcome.cleared_voters == ("a1", "a2", "a4")
    assert set(s.votes) == {"a3"}


def test_a_new_answer_clears_its_authors_own_vote() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "first")
    s.submit_vote("a1", "agent1", "mine", seen=1)

    outcome = s.submit_answer("a1", "second")

    assert outcome.cleared_voters == ("a1",)
    assert s.votes == {}


def test_excluding_an_agent_while_agents_vote_withdraws_its_vote() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "first")
    s.submit_vote("a1", "agent1", "mine", seen=1)

    assert s.fail("a1", "it broke") == Exclusion(withdrawn_vote="agent1.1")
    assert s.votes == {}


def test_excluding_an_agent_without_a_vote_withdraws_none() -> None:
    s = state("a1", "a2")

    assert s.fail("a1", "it broke") == Exclusion(withdrawn_vote=None)
    assert s.fail("a1", "again") is None  # no longer live: nothing changes


def test_excluding_an_agent_once_coordination_is_over_keeps_its_vote() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "first")
    s.submit_vote("a1", "agent1", "mine", seen=1)
    s.phase = Phase.PRESENTING

    assert s.fail("a1", "it crashed presenting") == Exclusion(withdrawn_vote=None)
    assert set(s.votes) == {"a1"}
