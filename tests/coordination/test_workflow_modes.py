"""What each agent is offered and when: deferred voting (a held "you may vote now"), the
answer cap (only ``vote`` at the cap), ``skip_voting`` (``vote`` never offered), and the
single agent with refinement on (``vote`` means "I'm done refining")."""

from __future__ import annotations

from conclave.actors.agent.events import RoundStarted
from conclave.actors.coordination.events import (
    AnswerAdded,
    FinalAnswerProduced,
    VoteAdded,
    VotingComplete,
)
from conclave.actors.coordination.protocol import VotingOpen
from conclave.config.modes import AgentMode, ModeState, apply_modes
from conclave.config.schema import Misbehaviour
from conclave.runtime import Held
from tests.coordination.helpers import agent, config, run_tapped


async def test_deferred_voting_no_vote_before_every_live_agent_has_answered(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("fast", seed=1, latency=0.1),
            agent("mid", seed=2, latency=0.5),
            agent("slow", seed=3, latency=2.0),
            defer_voting_until_all_answered=True,
            quiet_period=None,
        )
    )

    first_answers = {e.agent: run.position(e) for e in reversed(run.events(AnswerAdded))}
    assert set(first_answers) == {"fast", "mid", "slow"}
    votes = run.events(VoteAdded)
    assert votes
    assert all(run.position(v) > max(first_answers.values()) for v in votes)
    held = [e for e in run.events(Held) if isinstance(e.envelope.payload, VotingOpen)]
    assert {e.envelope.recipient.key for e in held} == {"fast", "mid"}
    assert all(e.reason == "voting deferred until every live agent has answered" for e in held)


async def test_without_deferred_voting_early_agents_vote_before_the_last_answer(
    autojump_clock: object,
) -> None:
    # Control for the test above.
    run = await run_tapped(
        config(
            agent("fast", seed=1, latency=0.1),
            agent("mid", seed=2, latency=0.5),
            agent("slow", seed=3, latency=2.0),
            quiet_period=None,
            first_vote_wait=None,
        )
    )

    [slow_answer] = run.answers_added("slow")
    assert any(run.position(v) < run.position(slow_answer) for v in run.events(VoteAdded))


async def test_deferred_voting_does_not_wait_for_an_excluded_agent(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.5),
            agent("b", seed=2, latency=0.5),
            agent("broken", seed=3, latency=0.1, misbehave=Misbehaviour.ERROR),
            defer_voting_until_all_answered=True,
        )
    )

    assert set(run.result.failed_agents) == {"broken"}
    assert set(run.result.votes) == {"a", "b"}
    assert run.result.termination == "completed"


async def test_at_the_answer_cap_an_agent_is_offered_only_vote(autojump_clock: object) -> None:
    # eager would give five answers; the cap stops it at two.
    run = await run_tapped(
        config(
            agent("eager", seed=1, latency=0.2, answers=5),
            agent("other", seed=2, latency=0.2),
            max_new_answers_per_agent=2,
        )
    )

    answers = run.answers_added("eager")
    assert [a.label for a in answers] == ["agent1.1", "agent1.2"]
    after_cap = [r for r in run.rounds("eager") if run.position(r) > run.position(answers[-1])]
    assert after_cap
    assert all(r.tools == ("vote",) for r in after_cap)
    assert "eager" in run.result.votes


async def test_refinement_off_every_round_after_the_first_answer_offers_only_vote(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        apply_modes(
            config(agent("a", seed=1, latency=0.2), agent("b", seed=2, latency=0.3)),
            ModeState(refinement=False),
        )
    )

    for member in ("a", "b"):
        first, *later = run.rounds(member)
        assert first.tools == ("new_answer",)
        assert later
        assert all(r.tools == ("vote",) for r in later)
        assert len(run.answers_added(member)) == 1


async def test_skip_voting_never_offers_vote_and_goes_straight_to_the_final_answer(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.2),
            agent("b", seed=2, latency=0.4),
            agent("c", seed=3, latency=0.6),
            skip_voting=True,
        )
    )

    assert all(r.tools == ("new_answer",) for r in run.events(RoundStarted))
    assert run.events(VoteAdded) == []
    assert run.events(VotingComplete) == []
    assert run.result.termination == "completed"
    [final] = run.events(FinalAnswerProduced)
    assert final.presenter == "a"  # no votes: the first agent that answered
    assert run.result.final_answer == final.content


async def test_single_agent_with_refinement_on_votes_to_say_it_is_done_refining(
    autojump_clock: object,
) -> None:
    cfg = apply_modes(
        config(
            agent("solo", seed=1, latency=0.5, answers=2),
            agent("unused", seed=2, latency=0.5),
        ),
        ModeState(agent_mode=AgentMode.SINGLE, refinement=True),
    )

    run = await run_tapped(cfg)

    assert [a.id for a in cfg.agents] == ["solo"]
    assert [a.label for a in run.answers_added("solo")] == ["agent1.1", "agent1.2"]
    [vote] = run.events(VoteAdded)
    assert (vote.voter, vote.label) == ("solo", "agent1.2")
    [complete] = run.events(VotingComplete)
    assert complete.winner == "solo"
    assert run.result.failed_agents == {}
    # two answers, the "done" vote, one presentation
    assert run.result.llm_calls == 4
    assert run.result.termination == "completed"


async def test_single_agent_with_refinement_off_answers_once_and_that_is_the_answer(
    autojump_clock: object,
) -> None:
    cfg = apply_modes(
        config(agent("first", seed=1, latency=0.5), agent("chosen", seed=2, latency=0.5)),
        ModeState(agent_mode=AgentMode.SINGLE, active_agent="chosen", refinement=False),
    )

    run = await run_tapped(cfg)

    assert [r.tools for r in run.rounds("chosen")] == [("new_answer",)]
    assert run.result.llm_calls == 1
    assert run.result.final_answer == run.answer_of("chosen")
    assert run.result.winner == "chosen"
    assert run.events(VoteAdded) == []
