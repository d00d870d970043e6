"""An answer the same as a current answer never costs its agent.

A deterministic model (temperature 0, the same prompt) gives every agent the same first
answer. Such an answer adds nothing to choose from, so no answer is added: it counts as the
agent's vote for the answer it repeats when the agent had been shown every other answer it
can see, and otherwise as the agent's part, after which it votes having seen them all.
Either way the agent stays in, and its later rounds may vote."""

from __future__ import annotations

import pytest

from conclave.actors.coordination.events import AnswerRepeated, VoteAdded, VotingComplete
from conclave.actors.llm.protocol import CallPurpose
from conclave.actors.prompts.coordination import parse_prompt
from conclave.config.schema import FinalAnswerStrategy, Misbehaviour
from tests.coordination.helpers import Recorder, agent, agents, config, run_tapped

SAME = "Hold papers; pick a lock; reset a router."


@pytest.mark.parametrize("n", [3, 50])
async def test_every_agent_giving_the_same_answer_stays_in_and_votes_for_it(
    autojump_clock: object, n: int
) -> None:
    run = await run_tapped(config(*agents(n, latency=0.2, jitter=0.5, answer_text=SAME)))

    result = run.result
    assert result.termination == "completed"
    assert result.failed_agents == {}
    [only] = result.answers
    assert only.content == SAME
    assert result.votes == {f"a{i}": only.label for i in range(1, n + 1)}
    repeated = [v for v in run.events(VoteAdded) if v.same_answer]
    assert sorted(v.voter for v in repeated) == sorted(a for a in result.votes if a != only.agent)
    assert run.events(VotingComplete)


@pytest.mark.parametrize("n", [3, 50])
async def test_the_same_answer_costs_no_llm_call_beyond_the_answer(
    autojump_clock: object, n: int
) -> None:
    run = await run_tapped(
        config(
            *agents(n, latency=0.2, jitter=0.5, answer_text=SAME),
            final_answer_strategy=FinalAnswerStrategy.WINNER_REUSE,
        )
    )

    # n answers, then the one author votes (for itself): nobody else calls the model again.
    assert run.result.llm_calls == n + 1


async def test_the_same_answer_as_an_answer_the_agent_was_not_shown_is_its_part_and_it_votes_next(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("early", latency=0.1, answer_text=SAME),
            agent("other", seed=2, latency=0.2),
            agent("late", latency=0.3, answer_text=SAME),
        )
    )

    # "late" wrote its answer before it could see "other"'s: writing it was no vote; it
    # voted in a round that showed it both answers (offering vote, though it never answered).
    assert run.answers_added("late") == []
    [repeated] = run.events(AnswerRepeated)
    assert (repeated.agent, repeated.label) == ("late", run.answers_added("early")[0].label)
    first, second = run.rounds("late")
    assert (first.tools, second.tools) == (("new_answer",), ("new_answer", "vote"))
    [late_vote] = [v for v in run.events(VoteAdded) if v.voter == "late"]
    assert late_vote.at > second.at
    assert run.result.failed_agents == {}


async def test_a_later_round_of_an_agent_whose_answer_counted_as_its_vote_offers_vote(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("early", latency=0.1, answer_text=SAME),
            agent("same", latency=0.2, answer_text=SAME),
            agent("other", seed=3, latency=0.5),
        )
    )

    # "other"'s later answer cleared the vote "same" had cast by repeating "early"'s.
    rounds = run.rounds("same")
    assert len(rounds) >= 2
    assert all("vote" in r.tools for r in rounds[1:])
    assert "same" in run.result.votes
    assert run.result.failed_agents == {}


async def test_an_agent_giving_its_own_answer_again_votes_for_it(autojump_clock: object) -> None:
    run = await run_tapped(
        config(
            agent("a1", latency=0.1, answers=2, answer_text=SAME),
            agent("a2", seed=2, latency=0.3),
        )
    )

    [own] = run.answers_added("a1")
    [vote] = [v for v in run.events(VoteAdded) if v.voter == "a1"]
    assert vote.label == own.label
    assert vote.same_answer
    assert vote.reason == f"gave its answer {own.label} again"


async def test_an_agent_scripted_to_repeat_an_existing_answer_stays_in(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("good", seed=1, latency=0.1),
            agent("copier", seed=2, latency=0.3, misbehave=Misbehaviour.DUPLICATE),
        )
    )

    # Its first prompt shows no answer (so it gives its own); its vote round repeats one.
    assert run.result.failed_agents == {}
    [vote] = [v for v in run.events(VoteAdded) if v.voter == "copier"]
    assert vote.same_answer
    assert run.result.votes["copier"] == vote.label


async def test_with_voting_deferred_an_agent_whose_answer_was_the_same_counts_as_answered(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            *agents(5, latency=0.2, jitter=0.5, answer_text=SAME),
            defer_voting_until_all_answered=True,
        )
    )

    assert run.result.termination == "completed"
    assert len(run.result.votes) == 5


async def test_agents_that_cannot_see_each_other_keep_their_same_answers(
    autojump_clock: object,
) -> None:
    run = await run_tapped(config(*agents(6, latency=0.2, answer_text=SAME), visibility="ring"))

    # In a ring of six nobody sees more than two others: at least two answers stand, and
    # every agent still votes.
    assert len(run.result.answers) >= 2
    assert len(run.result.votes) == 6
    assert run.result.failed_agents == {}


async def test_an_answer_repeated_keeps_its_place_in_the_order_its_agents_prompts_show(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    run = await run_tapped(
        config(
            agent("other", seed=1, latency=0.1),
            agent("early", latency=0.2, answer_text=SAME),
            agent("late", latency=0.3, answer_text=SAME),
        ),
        backend_factory=recorder,
    )

    given = [a.label for a in run.result.answers]
    rounds = [r for r in recorder.backends["late"].requests if r.purpose is CallPurpose.ROUND]
    assert list(parse_prompt(rounds[-1].messages).answers) == given
