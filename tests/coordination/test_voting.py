"""Who wins: most votes; ties to the agent listed first in the config; no votes at all, the
first agent that answered. A new answer clears every vote, and self-votes are allowed."""

from __future__ import annotations

from conclave.actors.coordination.events import AnswerAdded, VoteAdded, VotesCleared, VotingComplete
from conclave.config.schema import FinalAnswerStrategy
from tests.coordination.helpers import agent, config, run_tapped


async def test_the_answer_with_most_votes_wins(autojump_clock: object) -> None:
    # Anonymous ids follow sorted config ids: x=agent1, y=agent2, z=agent3.
    run = await run_tapped(
        config(
            agent("x", seed=1, latency=0.2, vote="agent3"),
            agent("y", seed=2, latency=0.2, vote="agent3"),
            agent("z", seed=3, latency=0.2, vote="agent1"),
        )
    )

    assert run.result.termination == "completed"
    assert run.result.winner == "z"
    [complete] = run.events(VotingComplete)
    assert complete.winner == "z"
    assert complete.tally == {"agent3.1": 2, "agent1.1": 1}
    assert run.result.votes == {"x": "agent3.1", "y": "agent3.1", "z": "agent1.1"}


async def test_a_tie_goes_to_the_agent_listed_first_in_the_config(autojump_clock: object) -> None:
    # amy answers first and sorts first (agent1), but zed is listed first in the config.
    run = await run_tapped(
        config(
            agent("zed", seed=1, latency=0.3, vote="self"),
            agent("amy", seed=2, latency=0.1, vote="self"),
        )
    )

    assert run.answers_added()[0].agent == "amy"
    [complete] = run.events(VotingComplete)
    assert complete.tally == {"agent2.1": 1, "agent1.1": 1}
    assert complete.winner == "zed"
    assert run.result.winner == "zed"


async def test_a_tie_is_broken_among_the_tied_agents_only(autojump_clock: object) -> None:
    # p and q are listed first but got no votes; r and s tie with two each.
    run = await run_tapped(
        config(
            agent("p", seed=1, latency=0.2, vote="agent4"),
            agent("q", seed=2, latency=0.2, vote="agent3"),
            agent("r", seed=3, latency=0.2, vote="agent4"),
            agent("s", seed=4, latency=0.2, vote="agent3"),
        )
    )

    [complete] = run.events(VotingComplete)
    assert complete.tally == {"agent3.1": 2, "agent4.1": 2}
    assert complete.winner == "r"


async def test_with_no_votes_at_all_the_first_agent_that_answered_wins(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("zed", seed=1, latency=0.3),
            agent("amy", seed=2, latency=0.2),
            agent("bob", seed=3, latency=0.1),
            skip_voting=True,
            final_answer_strategy=FinalAnswerStrategy.WINNER_REUSE,
        )
    )

    assert run.events(VoteAdded) == []
    assert run.result.votes == {}
    assert run.answers_added()[0].agent == "bob"
    assert run.result.winner == "bob"
    assert run.result.final_answer == run.answer_of("bob")


async def test_an_agent_may_vote_for_its_own_answer(autojump_clock: object) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.2, vote="self"),
            agent("b", seed=2, latency=0.3, vote="self"),
        )
    )

    own_label = {e.agent: e.label for e in run.events(AnswerAdded)}
    votes = {e.voter: e.label for e in run.events(VoteAdded)}
    assert votes == own_label
    assert run.result.failed_agents == {}


async def test_a_new_answer_clears_every_vote_and_the_voters_vote_again(
    autojump_clock: object,
) -> None:
    # fast answers and votes long before slow answers; slow's answer clears fast's vote.
    run = await run_tapped(
        config(
            agent("fast", seed=1, latency=0.1),
            agent("slow", seed=2, latency=2.0),
            first_vote_wait=None,
        )
    )

    slow_label = run.answers_added("slow")[0].label
    cleared = run.events(VotesCleared)
    assert [(c.by_label, c.voters, c.cleared) for c in cleared] == [(slow_label, ("fast",), 1)]
    fast_votes = [e for e in run.events(VoteAdded) if e.voter == "fast"]
    assert len(fast_votes) == 2
    assert fast_votes[0].at < cleared[0].at < fast_votes[1].at
    assert set(run.result.votes) == {"fast", "slow"}


async def test_a_vote_cleared_while_it_is_still_settling_is_cast_again(
    autojump_clock: object,
) -> None:
    # a's vote and b's answer reach the coordinator at the same instant (t=0.2). When the
    # answer wins the race, the VotesReset for a can overtake a's own "round settled";
    # a must still vote again, or the run waits for its vote forever. The order of the two
    # is up to the scheduler, so the race is run several times.
    for _ in range(30):
        run = await run_tapped(
            config(agent("a", seed=1, latency=0.1), agent("b", seed=2, latency=0.2))
        )

        assert run.result.termination == "completed"
        assert set(run.result.votes) == {"a", "b"}
