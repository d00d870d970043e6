"""A paused run's coordination replays into a fresh state (``restored_state``) as it was:
the same labels, votes, supporters and exclusions, by the state's own rules."""

from __future__ import annotations

import re

import pytest

from conclave.actors.agent.resume import History
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    AnswerRepeated,
    VoteAdded,
)
from conclave.actors.coordination.restore import RestoreError, restored_state
from conclave.actors.coordination.state import CoordinationState
from conclave.config.schema import OrchestratorConfig

AGENTS = ("a1", "a2", "a3")


def _restored(
    *history: AnswerAdded | VoteAdded | AnswerRepeated | AgentExcluded,
) -> CoordinationState:
    events: History = history
    return restored_state(
        task="t", agents=AGENTS, orchestrator=OrchestratorConfig(), asking="a1", history=events
    )


def _answer(agent: str, label: str, content: str) -> AnswerAdded:
    return AnswerAdded(at=0.0, agent=agent, label=label, content=content)


def test_answers_and_votes_replay_to_the_labels_and_votes_the_paused_run_had() -> None:
    state = _restored(
        _answer("a1", "agent1.1", "one"),
        _answer("a2", "agent2.1", "two"),
        VoteAdded(at=0.0, voter="a3", label="agent2.1", reason="best"),
    )

    assert [(a.label, a.content) for a in state.answers] == [
        ("agent1.1", "one"),
        ("agent2.1", "two"),
    ]
    assert {voter: a.label for voter, a in state.votes.items()} == {"a3": "agent2.1"}
    assert state.vote_reasons == {"a3": "best"}


def test_an_answer_that_counted_as_a_vote_replays_as_that_vote() -> None:
    state = _restored(
        _answer("a1", "agent1.1", "one"),
        VoteAdded(at=0.0, voter="a2", label="agent1.1", reason="", same_answer=True),
    )

    assert {voter: a.label for voter, a in state.votes.items()} == {"a2": "agent1.1"}
    assert len(state.answers) == 1


def test_a_repeated_answer_makes_its_agent_one_that_may_vote() -> None:
    state = _restored(
        _answer("a1", "agent1.1", "one"), AnswerRepeated(at=0.0, agent="a2", label="agent1.1")
    )

    assert state.voting_opened("a2")


def test_an_excluded_agent_stays_excluded() -> None:
    state = _restored(AgentExcluded(at=0.0, agent="a3", reason="bad key"))

    assert list(state.live) == ["a1", "a2"]
    assert state.failed == {"a3": "bad key"}


def test_the_restored_state_is_marked_resumed_for_the_coordinator_to_start_from() -> None:
    state = _restored(_answer("a1", "agent1.1", "one"))

    assert state.resumed
    assert not state.started  # the coordinator starts the resumed run (run_started) once


def test_a_vote_for_an_answer_the_history_lacks_does_not_replay() -> None:
    with pytest.raises(RestoreError, match=re.escape("a2's vote for agent1.1 does not replay")):
        _restored(VoteAdded(at=0.0, voter="a2", label="agent1.1", reason=""))
