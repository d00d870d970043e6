"""CoordinationState, the coordinator's pure state machine: whose votes a new answer
clears, what excluding an agent does to its vote, and what an answer the same as a current
one counts as."""

from __future__ import annotations

from collections.abc import Iterator

from conclave.actors.coordination.protocol import SameAnswer
from conclave.actors.coordination.state import CoordinationState, Exclusion, Phase
from conclave.config.schema import OrchestratorConfig


def state(*agents: str, visibility: str = "all") -> CoordinationState:
    return CoordinationState(
        task="t", agents=agents, orchestrator=OrchestratorConfig(visibility=visibility)
    )


def test_a_new_answer_clears_the_votes_of_the_agents_shown_it_and_no_others() -> None:
    s = state("a1", "a2", "a3", "a4", visibility="ring")
    s.submit_answer("a2", "two", shown=())
    s.submit_answer("a3", "three", shown=())
    for voter, target in (("a1", "agent2"), ("a2", "agent2"), ("a3", "agent2"), ("a4", "agent3")):
        s.submit_vote(voter, target, "why", seen=99)

    outcome = s.submit_answer("a1", "one", shown=())  # a1's neighbours in the ring: a4 and a2

    assert outcome.cleared_voters == ("a1", "a2", "a4")
    assert set(s.votes) == {"a3"}


def test_a_new_answer_clears_its_authors_own_vote() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "first", shown=())
    s.submit_vote("a1", "agent1", "mine", seen=1)

    outcome = s.submit_answer("a1", "second", shown=())

    assert outcome.cleared_voters == ("a1",)
    assert s.votes == {}


def test_excluding_an_agent_while_agents_vote_withdraws_its_vote() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "first", shown=())
    s.submit_vote("a1", "agent1", "mine", seen=1)

    assert s.fail("a1", "it broke") == Exclusion(withdrawn_vote="agent1.1")
    assert s.votes == {}


def test_excluding_an_agent_without_a_vote_withdraws_none() -> None:
    s = state("a1", "a2")

    assert s.fail("a1", "it broke") == Exclusion(withdrawn_vote=None)
    assert s.fail("a1", "again") is None  # no longer live: nothing changes


def test_excluding_an_agent_once_coordination_is_over_keeps_its_vote() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "first", shown=())
    s.submit_vote("a1", "agent1", "mine", seen=1)
    s.phase = Phase.PRESENTING

    assert s.fail("a1", "it crashed presenting") == Exclusion(withdrawn_vote=None)
    assert set(s.votes) == {"a1"}


def test_an_answer_the_same_as_a_current_one_counts_as_a_vote_for_it_and_adds_no_answer() -> None:
    s = state("a1", "a2")
    first = s.submit_answer("a1", "Use a paperclip.", shown=()).answer

    outcome = s.submit_answer("a2", "  Use a paperclip.\n", shown=())

    assert outcome.answer is None and outcome.error is None
    assert outcome.same_as == first
    assert outcome.counted is SameAnswer.VOTE
    assert s.answers == [first]
    assert s.votes == {"a2": first}
    assert s.vote_reasons["a2"] == "gave the same answer as agent1.1"
    assert s.voting_opened("a2")


def test_the_same_answer_counts_as_the_agents_part_when_it_was_not_shown_every_answer() -> None:
    s = state("a1", "a2", "a3")
    s.submit_answer("a1", "X", shown=())
    s.submit_answer("a3", "Y", shown=())

    outcome = s.submit_answer("a2", "X", shown=())  # agent3.1 exists; a2 was not shown it

    assert outcome.counted is SameAnswer.PART
    assert s.votes == {}
    assert s.voting_opened("a2")


def test_the_same_answer_counts_as_a_vote_once_the_agent_was_shown_every_answer() -> None:
    s = state("a1", "a2", "a3")
    s.submit_answer("a1", "X", shown=())
    s.submit_answer("a1", "X2", shown=())
    s.submit_answer("a3", "Y", shown=())

    # The latest label shown stands for the earlier versions of its author.
    outcome = s.submit_answer("a2", "Y", shown=("agent1.2",))

    assert outcome.counted is SameAnswer.VOTE
    assert s.votes["a2"].label == "agent3.1"


def test_an_agents_own_answer_given_again_is_its_vote_for_itself() -> None:
    s = state("a1", "a2")
    own = s.submit_answer("a1", "X", shown=()).answer

    outcome = s.submit_answer("a1", "X", shown=("agent1.1",))

    assert outcome.counted is SameAnswer.VOTE
    assert s.votes == {"a1": own}
    assert s.vote_reasons["a1"] == "gave its answer agent1.1 again"


def test_the_text_of_a_superseded_answer_is_a_new_answer() -> None:
    s = state("a1", "a2")
    s.submit_answer("a1", "X", shown=())
    s.submit_answer("a1", "X revised", shown=())

    outcome = s.submit_answer("a2", "X", shown=("agent1.2",))

    assert outcome.answer is not None and outcome.answer.label == "agent2.1"


def test_the_same_text_as_an_answer_the_agent_cannot_see_is_a_new_answer() -> None:
    s = state("a1", "a2", "a3", "a4", "a5", visibility="ring")  # a1 sees a5 and a2, not a3
    s.submit_answer("a3", "X", shown=())

    outcome = s.submit_answer("a1", "X", shown=())

    assert outcome.answer is not None and outcome.answer.label == "agent1.1"


def test_with_voting_skipped_the_same_answer_is_a_new_answer() -> None:
    s = CoordinationState(
        task="t", agents=("a1", "a2"), orchestrator=OrchestratorConfig(skip_voting=True)
    )
    s.submit_answer("a1", "X", shown=())

    outcome = s.submit_answer("a2", "X", shown=())

    assert outcome.answer is not None and outcome.answer.agent == "a2"
    assert s.votes == {}


def test_the_same_answer_is_no_answer_against_the_cap() -> None:
    s = CoordinationState(
        task="t", agents=("a1", "a2"), orchestrator=OrchestratorConfig(max_new_answers_per_agent=1)
    )
    s.submit_answer("a1", "X", shown=())
    s.submit_answer("a2", "Y", shown=())

    outcome = s.submit_answer("a2", "X", shown=("agent1.1", "agent2.1"))

    assert outcome.counted is SameAnswer.VOTE


class _Unwalkable(dict[str, None]):
    """The live agents, refusing to be walked: a check made after every answer and vote
    that walks them costs a run of N agents N² steps."""

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("walked every live agent")


def test_looking_for_stragglers_while_no_agent_is_failing_does_not_walk_the_agents() -> None:
    s = state("a1", "a2", "a3")
    s.live = _Unwalkable(s.live)

    assert s.stragglers() == ()


def test_asking_whether_an_agent_is_live_does_not_walk_the_agents() -> None:
    s = state("a1", "a2", "a3")
    s.live = _Unwalkable(s.live)

    assert s.submit_answer("a3", "three", shown=()).answer is not None
    assert s.submit_vote("a2", "agent3", "why", seen=1)[1] is None
