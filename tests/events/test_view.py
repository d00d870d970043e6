"""RunView: the run as a person follows it, reduced from domain events alone."""

from __future__ import annotations

from conclave.actors.agent.events import (
    AgentStatusChanged,
    LlmRequestFinished,
    LlmRequestStarted,
    RoundRestarted,
    RoundStarted,
)
from conclave.actors.agent.status import AgentStatus
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    FinalAnswerProduced,
    RunStarted,
    VoteAdded,
    VotesCleared,
    VotingComplete,
)
from conclave.actors.coordination.state import Answer
from conclave.actors.events import LlmRetry, TextDelta, ToolCallFinished, ToolCallStarted
from conclave.actors.events.view import AgentView, RunPhase, RunView
from conclave.actors.llm.protocol import CallOutcome, CallPurpose
from conclave.actors.run.events import RunEnded
from conclave.actors.run.termination import Termination
from conclave.config.schema import FinalAnswerStrategy, InFlightPolicy
from conclave.runtime import ChildStarted, Event, loads

STARTED = RunStarted(
    at=10.0,
    task="Name three uses",
    agents=("a1", "a2"),
    anonymous_ids=("agent1", "agent2"),
    strategy=FinalAnswerStrategy.WINNER_PRESENT,
)


def view_of(*events: Event) -> RunView:
    return RunView.from_events([STARTED, *events])


def round_started(agent: str, at: float, n: int = 1) -> RoundStarted:
    return RoundStarted(at=at, agent=agent, round=n, tools=("new_answer",))


def status(agent: str, value: AgentStatus, at: float) -> AgentStatusChanged:
    return AgentStatusChanged(at=at, agent=agent, status=value)


def answer(agent: str, label: str, at: float) -> AnswerAdded:
    return AnswerAdded(at=at, agent=agent, label=label, content=f"{agent}'s answer")


def vote(voter: str, label: str, at: float) -> VoteAdded:
    return VoteAdded(at=at, voter=voter, label=label, reason="clearest")


def ended(at: float, termination: Termination = Termination.COMPLETED) -> RunEnded:
    return RunEnded(at=at, termination=termination, winner="a2", final_answer="final")


def test_before_run_started_the_view_is_empty_and_starting() -> None:
    view = RunView()

    assert view.phase is RunPhase.STARTING
    assert view.agents == {}
    assert view.elapsed == 0.0


def test_run_started_lists_the_agents_idle_with_their_anonymous_ids() -> None:
    view = view_of()

    assert view.phase is RunPhase.COORDINATING
    assert view.task == "Name three uses"
    assert view.strategy is FinalAnswerStrategy.WINNER_PRESENT
    assert view.started_at == 10.0
    assert list(view.agents.values()) == [
        AgentView(agent="a1", anonymous_id="agent1"),
        AgentView(agent="a2", anonymous_id="agent2"),
    ]


def test_a_round_makes_an_agent_working_and_starts_its_clock() -> None:
    agent = view_of(round_started("a1", 11.0)).agents["a1"]

    assert agent.status == "working"
    assert agent.round == 1
    assert agent.started_at == 11.0
    assert agent.elapsed(13.5) == 2.5


def test_an_agent_clock_runs_from_its_first_round_to_its_stop() -> None:
    view = view_of(
        round_started("a1", 11.0),
        round_started("a1", 12.0, n=2),
        status("a1", AgentStatus.STOPPED, 14.0),
    )

    assert view.agents["a1"].started_at == 11.0
    assert view.agents["a1"].elapsed(99.0) == 3.0


def test_an_agent_that_never_started_has_no_elapsed_time() -> None:
    assert view_of().agents["a2"].elapsed(50.0) == 0.0


def test_statuses_are_the_agents_own() -> None:
    view = view_of(round_started("a1", 11.0), status("a1", AgentStatus.ANSWERED, 12.0))

    assert view.agents["a1"].status == "answered"


def test_llm_calls_and_tokens_add_up_per_agent() -> None:
    view = view_of(
        LlmRequestStarted(at=11.0, agent="a1", purpose=CallPurpose.ROUND),
        LlmRequestFinished(
            at=12.0,
            agent="a1",
            purpose=CallPurpose.ROUND,
            outcome=CallOutcome.OK,
            input_tokens=100,
            output_tokens=20,
        ),
        LlmRequestStarted(at=13.0, agent="a1", purpose=CallPurpose.ROUND),
        LlmRequestFinished(
            at=14.0,
            agent="a1",
            purpose=CallPurpose.ROUND,
            outcome=CallOutcome.OK,
            input_tokens=150,
            output_tokens=30,
        ),
    )

    agent = view.agents["a1"]
    assert (agent.llm_calls, agent.input_tokens, agent.output_tokens) == (2, 250, 50)
    assert view.agents["a2"].llm_calls == 0


def test_an_agent_shows_the_model_its_latest_reply_came_from() -> None:
    def finished(at: float, model: str | None) -> LlmRequestFinished:
        return LlmRequestFinished(
            at=at, agent="a1", purpose=CallPurpose.ROUND, outcome=CallOutcome.OK, model=model
        )

    view = view_of(finished(11.0, "gpt-a"), finished(12.0, "gpt-b"), finished(13.0, None))

    assert view.agents["a1"].model == "gpt-b"  # a failed call names none: the last stands
    assert view.agents["a2"].model is None


def test_cached_prompt_tokens_add_up_per_agent() -> None:
    view = view_of(
        LlmRequestFinished(
            at=12.0,
            agent="a1",
            purpose=CallPurpose.ROUND,
            outcome=CallOutcome.OK,
            input_tokens=100,
            cache_read_tokens=80,
        ),
        LlmRequestFinished(
            at=14.0,
            agent="a1",
            purpose=CallPurpose.ROUND,
            outcome=CallOutcome.OK,
            input_tokens=100,
            cache_read_tokens=90,
        ),
    )

    assert view.agents["a1"].cache_read_tokens == 170


def test_retries_and_restarts_are_counted() -> None:
    view = view_of(
        LlmRetry(at=11.0, agent="a1", attempt=1, status=429, delay=2.0),
        RoundRestarted(at=12.0, agent="a1", round=1, policy=InFlightPolicy.CANCEL),
    )

    assert view.agents["a1"].llm_retries == 1
    assert view.agents["a1"].restarts == 1


def test_the_tool_in_progress_shows_until_it_finishes() -> None:
    started = ToolCallStarted(at=11.0, agent="a1", tool="read_file", call_id="c1", arguments="{}")
    finished = ToolCallFinished(
        at=12.0,
        agent="a1",
        tool="read_file",
        call_id="c1",
        arguments="{}",
        output="text",
        duration=1.0,
        ok=True,
        error=None,
    )

    assert view_of(started).agents["a1"].tool == "read_file"
    assert view_of(started, finished).agents["a1"].tool is None
    assert view_of(started, finished).agents["a1"].tool_calls == 1


def test_answers_are_kept_in_order_with_each_agents_latest_label() -> None:
    view = view_of(answer("a1", "agent1.1", 11.0), answer("a2", "agent2.1", 12.0))

    assert view.answers == [
        Answer(label="agent1.1", agent="a1", content="a1's answer"),
        Answer(label="agent2.1", agent="a2", content="a2's answer"),
    ]
    assert view.agents["a1"].answer == "agent1.1"


def test_votes_are_kept_per_voter() -> None:
    view = view_of(answer("a1", "agent1.1", 11.0), vote("a2", "agent1.1", 12.0))

    assert view.votes == {"a2": "agent1.1"}
    assert view.agents["a2"].vote == "agent1.1"


def test_votes_cleared_clears_exactly_the_votes_of_the_voters_it_names() -> None:
    view = view_of(
        answer("a1", "agent1.1", 11.0),
        vote("a1", "agent1.1", 12.0),
        vote("a2", "agent1.1", 12.5),
        answer("a2", "agent2.1", 13.0),
        VotesCleared(at=13.0, by_label="agent2.1", voters=("a2",), cleared=1),
    )

    assert view.votes == {"a1": "agent1.1"}
    assert view.agents["a1"].vote == "agent1.1"
    assert view.agents["a2"].vote is None


def test_a_new_answer_by_itself_clears_no_vote() -> None:
    """In a ring or islands a vote stands when its voter cannot see the new answer; only
    ``votes_cleared`` says whose votes went."""
    view = view_of(
        answer("a1", "agent1.1", 11.0),
        vote("a1", "agent1.1", 12.0),
        answer("a2", "agent2.1", 13.0),
    )

    assert view.votes == {"a1": "agent1.1"}


def test_votes_cleared_from_a_log_written_before_voters_were_named_clears_every_vote() -> None:
    old = loads(
        '{"kind":"votes_cleared","at":13.0,"by_label":"agent2.1","cleared":2}', VotesCleared
    )
    view = view_of(
        answer("a1", "agent1.1", 11.0),
        vote("a1", "agent1.1", 12.0),
        vote("a2", "agent1.1", 12.5),
        answer("a2", "agent2.1", 13.0),
        old,
    )

    assert old.voters is None
    assert view.votes == {}
    assert view.agents["a1"].vote is None


def test_an_excluded_agent_loses_the_vote_it_withdrew_and_its_clock_stops() -> None:
    view = view_of(
        round_started("a1", 11.0),
        answer("a2", "agent2.1", 11.5),
        vote("a1", "agent2.1", 12.0),
        AgentExcluded(at=13.0, agent="a1", reason="3 tries failed", withdrawn_vote="agent2.1"),
    )

    agent = view.agents["a1"]
    assert (agent.status, agent.excluded, agent.vote) == (
        AgentStatus.EXCLUDED,
        "3 tries failed",
        None,
    )
    assert view.votes == {}
    assert agent.elapsed(50.0) == 2.0


def test_an_agent_excluded_once_voting_is_over_keeps_the_vote_that_decided() -> None:
    view = view_of(
        answer("a2", "agent2.1", 11.5),
        vote("a1", "agent2.1", 12.0),
        vote("a2", "agent2.1", 12.0),
        VotingComplete(at=12.0, winner="a2", label="agent2.1", tally={"agent2.1": 2}),
        AgentExcluded(at=13.0, agent="a1", reason="it crashed too often"),
    )

    assert view.votes == {"a1": "agent2.1", "a2": "agent2.1"}
    assert view.agents["a1"].vote == "agent2.1"
    assert view.agents["a1"].status is AgentStatus.EXCLUDED


def test_voting_complete_names_the_winner() -> None:
    view = view_of(VotingComplete(at=14.0, winner="a2", label="agent2.1", tally={"agent2.1": 2}))

    assert (view.winner, view.winner_label, view.tally) == ("a2", "agent2.1", {"agent2.1": 2})
    assert view.phase is RunPhase.VOTING_COMPLETE


def test_a_presenting_agent_puts_the_run_in_its_presentation() -> None:
    view = view_of(status("a2", AgentStatus.PRESENTING, 15.0))

    assert view.phase is RunPhase.PRESENTING
    assert view.presenter == "a2"


def test_the_final_answer_finishes_the_run_and_its_presenter() -> None:
    view = view_of(
        round_started("a2", 11.0),
        status("a2", AgentStatus.PRESENTING, 15.0),
        FinalAnswerProduced(
            at=16.0, presenter="a2", strategy=FinalAnswerStrategy.WINNER_PRESENT, content="final"
        ),
    )

    assert view.phase is RunPhase.FINISHED
    assert view.final_answer == "final"
    assert view.agents["a2"].status is AgentStatus.PRESENTED
    assert view.agents["a2"].stopped_at == 16.0


def test_run_ended_records_how_and_stops_every_clock() -> None:
    view = view_of(round_started("a1", 11.0), ended(20.0, Termination.TIMEOUT))

    assert view.phase is RunPhase.ENDED
    assert view.termination == "timeout"
    assert view.winner == "a2"
    assert view.agents["a1"].elapsed(99.0) == 9.0


def test_now_is_the_time_of_the_latest_event() -> None:
    view = view_of(round_started("a1", 11.0), round_started("a2", 12.5))

    assert view.now == 12.5
    assert view.elapsed == 2.5


def test_ephemeral_events_leave_the_view_unchanged() -> None:
    before = view_of(round_started("a1", 11.0))
    after = view_of(round_started("a1", 11.0), TextDelta(at=12.0, agent="a1", text="Hel"))

    assert after == before


def test_kernel_events_leave_the_view_unchanged() -> None:
    kernel = ChildStarted(at=12.0, supervisor="run", child="coordinator", incarnation=1)

    assert view_of(kernel) == view_of()


def test_agents_the_view_has_not_met_appear_when_they_act() -> None:
    view = RunView.from_events([round_started("late", 5.0)])

    assert view.agents["late"].status == "working"
