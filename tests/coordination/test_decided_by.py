"""``RunResult.decided_by`` says how the final answer was chosen, so a run decided without any
vote says so: ``votes``, ``no_votes``, ``override``, or ``<termination>_best_so_far`` when the
run ended before coordination decided. ``None`` exactly when there is no final answer."""

from __future__ import annotations

import json

from conclave.actors.coordination.events import VotingComplete
from conclave.actors.human.manual import ManualGate
from conclave.actors.run.driver import RunSpec, open_run
from conclave.actors.run.result import DecidedBy, Termination
from tests.coordination.helpers import TASK, WaitingTap, agent, config, run_tapped


async def test_a_run_decided_by_a_vote_says_votes(autojump_clock: object) -> None:
    run = await run_tapped(config(agent("a", seed=1), agent("b", seed=2)))

    assert run.result.votes
    assert run.result.decided_by is DecidedBy.VOTES


async def test_a_run_without_voting_says_no_votes(autojump_clock: object) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1), agent("b", seed=2), skip_voting=True, max_new_answers_per_agent=1
        )
    )

    assert run.result.votes == {}
    assert run.result.decided_by is DecidedBy.NO_VOTES


async def test_a_human_override_says_override(autojump_clock: object) -> None:
    tap = WaitingTap()
    cfg = config(agent("a", seed=1, vote="agent2"), agent("b", seed=2, vote="agent2"))
    async with open_run(RunSpec(task=TASK, config=cfg, human=ManualGate()), taps=[tap]) as h:
        await tap.wait_for(VotingComplete)
        await h.override("a")
        result = await h.result()

    assert result.decided_by is DecidedBy.OVERRIDE


async def test_a_timeout_with_answers_says_timeout_best_so_far(autojump_clock: object) -> None:
    run = await run_tapped(
        config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=60.0), run_timeout=10.0)
    )

    assert run.result.final_answer is not None
    assert run.result.decided_by is DecidedBy.TIMEOUT_BEST_SO_FAR


async def test_a_run_without_a_final_answer_has_no_decided_by(autojump_clock: object) -> None:
    run = await run_tapped(config(agent("a", latency=60.0), run_timeout=10.0))

    assert run.result.final_answer is None
    assert run.result.decided_by is None


async def test_a_timeout_without_any_answer_says_in_the_json_that_there_is_none(
    autojump_clock: object,
) -> None:
    run = await run_tapped(config(agent("a", latency=60.0), run_timeout=10.0))

    data = run.result.to_json()
    assert data["termination"] == "timeout"
    assert data["final_answer"] is None
    assert data["winner"] is None
    assert data["decided_by"] is None
    assert data["answers"] == []


async def test_the_json_result_carries_decided_by_and_termination_as_strings(
    autojump_clock: object,
) -> None:
    run = await run_tapped(config(agent("a", seed=1), agent("b", seed=2)))

    data = json.loads(json.dumps(run.result.to_json()))
    assert data["decided_by"] == "votes"
    assert data["termination"] == "completed"
    assert type(run.result.to_json()["termination"]) is str
    assert run.result.termination is Termination.COMPLETED
