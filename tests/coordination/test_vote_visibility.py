"""Under ``ring`` or ``islands`` visibility an agent votes only for answers it was shown,
and a new answer resets only the votes of the agents that can see it."""

from __future__ import annotations

from conclave.actors.coordination.events import AgentExcluded, VoteAdded, VotesCleared
from conclave.actors.coordination.protocol import VotesReset
from conclave.actors.events.view import RunView
from tests.coordination.helpers import agent, agents, config, run_tapped


async def test_a_vote_for_an_answer_the_voter_was_never_shown_is_rejected(
    autojump_clock: object,
) -> None:
    # A ring of five: a1 (agent1) sees a5 and a2, never a3 (agent3), whom it insists on.
    others = agents(5, latency=1.0)[1:]
    run = await run_tapped(
        config(agent("a1", seed=1, latency=1.0, vote="agent3"), *others, visibility="ring")
    )

    assert not [v for v in run.events(VoteAdded) if v.voter == "a1"]
    [excluded] = run.events(AgentExcluded)
    assert excluded.agent == "a1"
    assert "agent3's answer was never shown to you" in excluded.reason
    assert "agent1, agent2, agent5" in excluded.reason
    assert "a1" not in run.result.votes
    assert run.result.termination == "completed"


async def test_a_new_answer_resets_only_the_votes_of_agents_that_can_see_it(
    autojump_clock: object,
) -> None:
    # A ring of six. a1 answers late, twice; the others have voted by then. Only its
    # neighbours a6 and a2 see its answers, so only their votes are reset.
    late = agent("a1", seed=1, latency=3.0, answers=2)
    run = await run_tapped(config(late, *agents(6, latency=1.0)[1:], visibility="ring"))

    reset = {delivery.envelope.recipient.key for delivery in run.delivered(VotesReset)}
    assert reset == {"a2", "a6"}
    for unaffected in ("a3", "a4", "a5"):
        assert len([v for v in run.events(VoteAdded) if v.voter == unaffected]) == 1
    assert len(run.result.votes) == 6


async def test_votes_cleared_names_the_voters_a_new_answer_reset_and_no_others(
    autojump_clock: object,
) -> None:
    late = agent("a1", seed=1, latency=3.0, answers=2)
    run = await run_tapped(config(late, *agents(6, latency=1.0)[1:], visibility="ring"))

    cleared = run.events(VotesCleared)
    assert {voter for event in cleared for voter in event.voters} == {"a2", "a6"}
    assert all(event.cleared == len(event.voters) for event in cleared)
    assert RunView.from_events(run.tap.events).votes == run.result.votes
