"""Every round ends in exactly one workflow call. A round that does not gets the error back
and is retried, at most 3 tries; an agent that exhausts them is excluded (``AgentFailed`` →
``AgentExcluded``), and the run goes on with the others."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import AgentExcluded, VoteAdded, VotingComplete
from conclave.actors.coordination.protocol import AgentFailed, Present
from conclave.actors.events.view import RunView
from conclave.actors.run.driver import COORDINATOR, RunSpec, open_run
from conclave.config.schema import Misbehaviour
from conclave.runtime import Envelope
from tests.coordination.faults import AllOf, CrashAfter, CrashOnStart, Poke
from tests.coordination.helpers import (
    RUN_LIMIT,
    TASK,
    Recorder,
    WaitingTap,
    agent,
    config,
    run_tapped,
)

EXPECTED_ERROR = {
    Misbehaviour.NO_CALL: "you made none",
    Misbehaviour.BOTH_CALLS: "You made 2 tool calls",
    Misbehaviour.UNKNOWN_TOOL: "'search_web' is not available",
    Misbehaviour.VOTE_WITHOUT_ANSWER: "'vote' is not available",
    Misbehaviour.MALFORMED: "not valid JSON",
    Misbehaviour.ERROR: "scripted failure injected",
    Misbehaviour.HANG: "did not answer within 5s",
}


FAILURES = [m for m in Misbehaviour if m is not Misbehaviour.DUPLICATE]
"""What costs a try: giving an existing answer again is no failure (tests/coordination/
test_same_answer.py)."""


@pytest.mark.parametrize("misbehaviour", FAILURES, ids=lambda m: m.value)
async def test_an_agent_that_fails_three_tries_is_excluded_and_the_run_goes_on(
    autojump_clock: object, misbehaviour: Misbehaviour
) -> None:
    run = await run_tapped(
        config(
            agent("good1", seed=1, latency=0.2),
            agent("bad", seed=2, latency=0.2, misbehave=misbehaviour),
            agent("good2", seed=3, latency=0.2),
            call_timeout=5.0,
        )
    )

    [(told, failed)] = run.payloads(AgentFailed)
    assert told.envelope.recipient == COORDINATOR
    assert failed.agent == "bad"
    [excluded] = run.events(AgentExcluded)
    assert excluded.agent == "bad"
    assert excluded.reason.startswith("3 tries failed")
    assert EXPECTED_ERROR[misbehaviour] in excluded.reason
    assert run.result.failed_agents == {"bad": excluded.reason}
    assert run.result.termination == "completed"
    assert set(run.result.votes) == {"good1", "good2"}
    assert run.events(VotingComplete)


@pytest.mark.parametrize("misbehaviour", FAILURES, ids=lambda m: m.value)
async def test_the_failing_round_costs_exactly_three_llm_calls(
    autojump_clock: object, misbehaviour: Misbehaviour
) -> None:
    run = await run_tapped(
        config(
            agent("good", seed=1, latency=0.2),
            agent("bad", seed=2, latency=0.2, misbehave=misbehaviour),
            call_timeout=5.0,
        )
    )

    assert run.llm_calls("bad") == 3
    assert run.answers_added("bad") == []


async def test_a_rejected_try_gets_the_error_back_in_the_next_prompt(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    await run_tapped(
        config(
            agent("good", seed=1, latency=0.2),
            agent("bad", seed=2, latency=0.2, misbehave=Misbehaviour.NO_CALL),
        ),
        backend_factory=recorder,
    )

    first, second, third = recorder.prompts("bad")
    assert "Error:" not in first
    assert "Error: You must end this turn with exactly one workflow tool call" in second
    assert third.count("Error:") == 2


async def test_an_agent_that_recovers_on_the_third_try_is_not_excluded(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("good", seed=1, latency=0.2),
            agent("shaky", seed=2, latency=0.2, misbehave=Misbehaviour.ERROR, misbehave_calls=2),
        )
    )

    assert run.result.failed_agents == {}
    assert run.events(AgentExcluded) == []
    assert len(run.answers_added("shaky")) == 1
    outcomes = [e.outcome for e in run.events(LlmRequestFinished) if e.agent == "shaky"]
    assert outcomes[:3] == ["error", "error", "ok"]


async def test_a_vote_for_an_agent_without_an_answer_is_a_failed_try(
    autojump_clock: object,
) -> None:
    # c (agent3) is excluded before it ever answers; a keeps voting for agent3.
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=1.0, vote="agent3"),
            agent("b", seed=2, latency=1.0),
            agent("c", seed=3, latency=0.1, misbehave=Misbehaviour.ERROR),
        )
    )

    assert set(run.result.failed_agents) == {"a", "c"}
    assert "'agent3' has no answer to vote for" in run.result.failed_agents["a"]
    assert run.answers_added("a")
    assert run.result.termination == "completed"
    assert run.result.winner == "b"


async def test_when_every_agent_is_excluded_before_answering_the_run_fails(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("a", latency=0.1, misbehave=Misbehaviour.ERROR),
            agent("b", latency=0.1, misbehave=Misbehaviour.MALFORMED),
        )
    )

    assert run.result.termination == "failed"
    assert run.result.final_answer is None
    assert run.result.winner is None
    assert set(run.result.failed_agents) == {"a", "b"}


def _poked(envelope: Envelope) -> bool:
    return isinstance(envelope.payload, Poke)


def _gone_for_good(agent: str, when: Callable[[Envelope], bool]) -> AllOf:
    """``agent`` crashes right after the message ``when`` picks, and cannot start again:
    it is excluded at that moment."""
    address = agent_address(agent)
    return AllOf(CrashAfter(address, when), CrashOnStart(address, incarnation=2))


async def test_an_agent_excluded_while_agents_vote_withdraws_its_vote_and_says_which(
    autojump_clock: object,
) -> None:
    # fast votes for its own answer long before slow answers, then is excluded: it is poked
    # (and crashes) as soon as its vote is added.
    tap = WaitingTap()
    cfg = config(agent("fast", seed=1, latency=0.1), agent("slow", seed=2, latency=2.0))
    spec = RunSpec(task=TASK, config=cfg, faults=_gone_for_good("fast", _poked))
    with trio.fail_after(RUN_LIMIT):
        async with open_run(spec, taps=[tap]) as h:
            await tap.wait_for(VoteAdded, lambda e: e.voter == "fast")
            h.system.tell_nowait(agent_address("fast"), Poke())
            result = await h.result()

    [excluded] = tap.of_type(AgentExcluded)
    assert (excluded.agent, excluded.withdrawn_vote) == ("fast", "agent1.1")
    assert set(result.votes) == {"slow"}
    assert RunView.from_events(tap.events).votes == result.votes


async def test_an_agent_excluded_once_voting_is_over_keeps_the_vote_that_decided(
    autojump_clock: object,
) -> None:
    # Both vote for b, which then crashes as it presents and cannot start again.
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.1, vote="agent2"),
            agent("b", seed=2, latency=0.1, vote="agent2"),
        ),
        faults=_gone_for_good("b", lambda e: isinstance(e.payload, Present)),
    )

    [complete] = run.events(VotingComplete)
    [excluded] = run.events(AgentExcluded)
    assert complete.at <= excluded.at
    assert (excluded.agent, excluded.withdrawn_vote) == ("b", None)
    assert run.result.votes == {"a": "agent2.1", "b": "agent2.1"}
    assert complete.tally == {"agent2.1": 2}
    assert RunView.from_events(run.tap.events).votes == run.result.votes
