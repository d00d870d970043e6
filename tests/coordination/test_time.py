"""Time limits and cancellation: ``run_timeout`` ends the run with the best answer so far
(most votes, else the newest answer); ``call_timeout`` makes a hung call a failed try;
``handle.cancel()`` ends the run as "cancelled" with a complete, readable event log."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from conclave.actors.agent.events import LlmRequestFinished, RoundStarted
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import AnswerAdded, VoteAdded
from conclave.actors.coordination.protocol import AnswerVerdict, StopWork, SubmitAnswer
from conclave.actors.events import LlmTryFailed
from conclave.actors.run.driver import COORDINATOR, RunSpec, open_run
from conclave.actors.run.events import RunEnded
from conclave.config.schema import Misbehaviour
from conclave.runtime import Delivered, LogOpened, read_event_log
from tests.coordination.faults import CrashDuring
from tests.coordination.helpers import Recorder, WaitingTap, agent, config, run_tapped


async def test_run_timeout_without_votes_ends_with_the_newest_answer(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=5.0),
            agent("b", seed=2, latency=7.0),
            agent("c", seed=3, latency=60.0),
            defer_voting_until_all_answered=True,
            run_timeout=10.0,
        )
    )

    assert run.result.termination == "timeout"
    assert run.events(VoteAdded) == []
    assert [a.agent for a in run.result.answers] == ["a", "b"]
    assert run.result.final_answer == run.answer_of("b")
    assert run.result.winner == "b"
    [ended] = run.events(RunEnded)
    assert ended.termination == "timeout"
    assert ended.at == 10.0


async def test_run_timeout_with_votes_ends_with_the_most_voted_answer(
    autojump_clock: object,
) -> None:
    # a and b answer at 1.0 and both vote for a; c is still working when time runs out.
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=1.0, vote="agent1"),
            agent("b", seed=2, latency=1.0, vote="agent1"),
            agent("c", seed=3, latency=60.0),
            run_timeout=10.0,
            first_vote_wait=None,
        )
    )

    assert run.result.termination == "timeout"
    assert run.result.votes == {"a": "agent1.1", "b": "agent1.1"}
    assert run.result.winner == "a"
    assert run.result.final_answer == run.answer_of("a")


async def test_run_timeout_before_any_answer_has_no_final_answer(autojump_clock: object) -> None:
    run = await run_tapped(config(agent("a", latency=60.0), run_timeout=10.0))

    assert run.result.termination == "timeout"
    assert run.result.final_answer is None
    assert run.result.answers == []


async def test_a_call_past_call_timeout_is_a_failed_try_and_is_retried(
    autojump_clock: object,
) -> None:
    # The first call hangs; the retry answers.
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.2),
            agent("hangs", seed=2, latency=0.2, misbehave=Misbehaviour.HANG, misbehave_calls=1),
            call_timeout=5.0,
        )
    )

    outcomes = [e for e in run.events(LlmRequestFinished) if e.agent == "hangs"]
    assert outcomes[0].outcome == "timeout"
    assert outcomes[0].at == 5.0
    assert outcomes[1].outcome == "ok"
    [failed] = [e for e in run.events(LlmTryFailed) if e.agent == "hangs"]
    assert failed.wait is not None and 0.0 <= failed.wait <= 1.0  # the back-off's first draw
    [answer] = run.answers_added("hangs")
    assert answer.at == pytest.approx(5.2 + failed.wait)
    assert run.result.failed_agents == {}
    assert run.result.termination == "completed"


async def test_cancel_ends_the_run_as_cancelled_with_the_best_answer_so_far(
    autojump_clock: object, tmp_path: Path
) -> None:
    tap = WaitingTap()
    spec = RunSpec(
        task="Name three uses of a paperclip",
        config=config(agent("quick", seed=1, latency=1.0), agent("slow", seed=2, latency=60.0)),
        log_dir=tmp_path,
    )
    async with open_run(spec, taps=[tap]) as handle:
        await tap.wait_for(AnswerAdded)
        await trio.sleep(1.0)
        handle.cancel()
        result = await handle.result()

    assert result.termination == "cancelled"
    assert [a.agent for a in result.answers] == ["quick"]
    assert result.final_answer == result.answers[0].content
    assert result.log_dir == str(tmp_path)

    reading = read_event_log(tmp_path / "events.jsonl")
    assert reading.truncated_line is None
    assert isinstance(reading.events[0], LogOpened)
    kinds = [type(e) for e in reading.events]
    assert AnswerAdded in kinds
    [ended] = [e for e in reading.events if isinstance(e, RunEnded)]
    assert ended.termination == "cancelled"
    # the log holds every event the run produced, up to the end, but for plain deliveries
    # (a run's log writes none: runtime/eventlog.py)
    assert [e.kind for e in reading.events] == [
        e.kind for e in tap.events if not isinstance(e, Delivered)
    ]


async def test_cancelling_the_caller_still_closes_a_readable_event_log(
    autojump_clock: object, tmp_path: Path
) -> None:
    # Ctrl+C arrives as trio.Cancelled in whoever awaits the run.
    spec = RunSpec(
        task="Name three uses of a paperclip",
        config=config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=60.0)),
        log_dir=tmp_path,
    )
    with trio.move_on_after(5.0):
        async with open_run(spec) as handle:
            await handle.result()

    reading = read_event_log(tmp_path / "events.jsonl")
    assert reading.truncated_line is None
    assert any(isinstance(e, AnswerAdded) for e in reading.events)


async def test_a_cancelled_run_stops_every_agent_before_shutting_down(
    autojump_clock: object,
) -> None:
    # Twenty agents still mid-round when the run is cancelled: none of them may go on to
    # answer or vote while the shutdown stops them one by one.
    tap = WaitingTap()
    members = tuple(agent(f"a{i:02d}", seed=i, latency=1.0 + i) for i in range(20))
    spec = RunSpec(task="Name three uses of a paperclip", config=config(*members))
    async with open_run(spec, taps=[tap]) as handle:
        await tap.wait_for(AnswerAdded)
        handle.cancel()
        result = await handle.result()

    assert result.termination == "cancelled"
    ended = next(i for i, e in enumerate(tap.events) if isinstance(e, RunEnded))
    after = tap.events[ended:]
    assert not [e for e in after if isinstance(e, AnswerAdded | VoteAdded)]
    assert not [e for e in after if isinstance(e, RoundStarted)]


async def test_a_run_that_ended_before_coordination_did_accepts_no_more_answers(
    autojump_clock: object,
) -> None:
    spec = RunSpec(
        task="Name three uses of a paperclip",
        config=config(agent("quick", seed=1, latency=1.0), agent("slow", seed=2, latency=60.0)),
    )
    async with open_run(spec) as handle:
        await trio.sleep(2.0)
        handle.cancel()
        await handle.result()
        late = SubmitAnswer(agent="slow", content="a late answer", round=1, shown=())
        verdict = await handle.system.ask(COORDINATOR, late)

    assert isinstance(verdict, AnswerVerdict)
    assert (verdict.accepted, verdict.error) == (
        False,
        "Coordination is over; no more answers are accepted.",
    )


async def test_an_agent_restarting_after_its_run_ended_resumes_no_round(
    autojump_clock: object,
) -> None:
    # slow is mid-call when the run is cancelled, and crashes on the StopWork that would
    # have stopped it: its restarted incarnation must not take the round up again.
    recorder = Recorder()
    spec = RunSpec(
        task="Name three uses of a paperclip",
        config=config(agent("quick", seed=1, latency=1.0), agent("slow", seed=2, latency=60.0)),
        backend_factory=recorder,
        faults=CrashDuring(agent_address("slow"), lambda e: isinstance(e.payload, StopWork)),
    )
    async with open_run(spec) as handle:
        await trio.sleep(2.0)
        handle.cancel()
        await handle.result()
        await trio.sleep(120.0)  # time enough for a resumed round to call its backend

    assert len(recorder.backends["slow"].requests) == 1
