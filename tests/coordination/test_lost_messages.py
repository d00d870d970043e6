"""A crash while an agent handles a one-way message loses that message (it is dead-lettered
with the incarnation, OTP's poison-message rule). The restarted agent rejoins: the
coordinator sends again, through the routing rules, what it may have lost, so the run still
completes with the winner its votes make. And an agent whose start-up crashes is excluded,
not the run.

Everyone votes for b (agent2). a and b answer at 1.0 and vote once voting opens; c answers
at 3.0, which resets their votes, and they vote again: so agent a is sent every one-way
message a run has (the task, updates, "you may vote now", "your vote was reset")."""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio

from conclave.actors.agent.events import RoundStarted
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import AgentExcluded, AnswerAdded, RunStarted, VoteAdded
from conclave.actors.coordination.protocol import (
    AnswerUpdate,
    AnswerVerdict,
    StartTask,
    SubmitVote,
    VotesReset,
    VotingOpen,
)
from conclave.actors.run.driver import COORDINATOR, RunSpec, open_run
from conclave.actors.run.result import DecidedBy
from conclave.runtime import (
    Address,
    ChildExited,
    DeadLetter,
    DeadLetterCause,
    Envelope,
    StartFailed,
    SupervisorEscalated,
)
from tests.chaos import harness
from tests.chaos.harness import ChaosPlan, Scenario, Tally, run_scenario, scenario
from tests.coordination.faults import CrashDuring, CrashOnStart, crashes
from tests.coordination.helpers import (
    RUN_LIMIT,
    TASK,
    Run,
    WaitingTap,
    agent,
    config,
    run_tapped,
)

CFG = config(
    agent("a", seed=1, latency=1.0, vote="agent2"),
    agent("b", seed=2, latency=1.0, vote="agent2"),
    agent("c", seed=3, latency=3.0, vote="agent2"),
    first_vote_wait=None,  # a and b vote before c answers, so c's answer resets their votes
)
A = agent_address("a")


@pytest.mark.parametrize(
    "lost", [StartTask, AnswerUpdate, VotingOpen, VotesReset], ids=lambda m: m.__name__
)
async def test_an_agent_crashing_while_it_handles_a_message_still_completes_the_run(
    autojump_clock: object, lost: type[Any]
) -> None:
    plan = CrashDuring(A, lambda e: isinstance(e.payload, lost))

    run = await run_tapped(CFG, faults=plan)

    assert len(crashes(run.tap.events, A)) == 1
    [dead] = [
        e
        for e in run.events(DeadLetter)
        if isinstance(e.envelope.payload, lost) and e.cause is DeadLetterCause.CRASHED
    ]
    assert dead.envelope.recipient == A
    result = run.result
    assert result.termination == "completed"
    assert result.winner == "b"
    assert result.decided_by is DecidedBy.VOTES
    assert result.failed_agents == {}
    assert result.votes == {"a": "agent2.1", "b": "agent2.1", "c": "agent2.1"}


async def test_an_update_lost_in_a_crash_is_sent_again_and_the_agent_refines_on_it(
    autojump_clock: object,
) -> None:
    # No voting: an answered agent refines whenever it sees a new answer. a answers at 1.0,
    # b at 1.5; c, still working until 3.0, keeps the run open meanwhile.
    cfg = config(
        agent("a", seed=1, latency=1.0),
        agent("b", seed=2, latency=1.5),
        agent("c", seed=3, latency=3.0),
        skip_voting=True,
    )
    plan = CrashDuring(A, lambda e: isinstance(e.payload, AnswerUpdate))

    undisturbed = await run_tapped(cfg)
    crashed = await run_tapped(cfg, faults=plan)

    assert plan.crashed == 1

    def refinement_at(run: Run) -> float:
        """When a's second round (its refinement) started, from the run's start."""
        [started] = run.events(RunStarted)
        second = run.rounds("a")[1]
        return second.at - float(started.at)

    assert refinement_at(crashed) == pytest.approx(refinement_at(undisturbed))
    assert len(crashed.answers_added("a")) == len(undisturbed.answers_added("a")) == 2


async def test_a_resubmitted_vote_that_was_reset_since_is_stale(autojump_clock: object) -> None:
    # a's vote is accepted, then c's answer resets it: a vote submitted again for that round
    # (an agent that crashed waiting for the verdict, whose reset died with it) must look
    # again, not be told its vote stands.
    tap = WaitingTap()
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=CFG), taps=[tap]) as h:
            voted: VoteAdded = await tap.wait_for(VoteAdded, lambda e: e.voter == "a")
            [vote_round] = [
                r.round for r in tap.of_type(RoundStarted) if r.agent == "a" and "vote" in r.tools
            ]
            await tap.wait_for(AnswerAdded, lambda e: e.agent == "c")
            again = await h.system.ask(
                COORDINATOR,
                SubmitVote(agent="a", target="agent2", reason="", seen=2, round=vote_round),
            )
            h.cancel()
            await h.result()

    assert voted.label == "agent2.1"
    assert isinstance(again, AnswerVerdict)
    assert again.stale
    assert not again.accepted


async def test_an_agent_whose_start_crashes_is_excluded_and_the_run_goes_on(
    autojump_clock: object,
) -> None:
    run = await run_tapped(CFG, faults=CrashOnStart(A))

    [excluded] = run.events(AgentExcluded)
    assert excluded.agent == "a"
    assert excluded.reason.startswith("the agent could not start: InjectedCrash")
    assert run.events(SupervisorEscalated) == []
    assert not [e for e in run.events(ChildExited) if isinstance(e.error, StartFailed)]
    assert run.result.termination == "completed"
    assert run.result.winner == "b"
    assert run.result.failed_agents == {"a": excluded.reason}


class _CrashingInHandlers(ChaosPlan):
    """The chaos plan, and besides: agents crash inside handlers, losing the message."""

    def __init__(self, s: Scenario) -> None:
        super().__init__(s)
        self._during = random.Random(f"during:{s.seed}")
        self._left = 3

    def crash_during(self, actor: Address, envelope: Envelope) -> str | None:
        if actor.kind != "agent" or self._left <= 0 or self._during.random() >= 0.08:
            return None
        self._left -= 1
        self.crashed["during"] += 1
        return f"chaos crash of {actor} while handling {type(envelope.payload).__name__}"


async def test_random_runs_whose_agents_crash_inside_handlers_keep_every_promise(
    autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without rejoining, about a third of these runs hang.
    monkeypatch.setattr(harness, "ChaosPlan", _CrashingInHandlers)
    tally = Tally()
    for seed in range(100):
        tally.add(await run_scenario(scenario(seed)))

    assert not tally.failures, tally.report()
    assert tally.crashes["during"] > 100
