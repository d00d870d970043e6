"""The override window asks the run's human gate: after the vote, the gate accepts the winner
or chooses another agent to present, while the run clock is paused. A gate that fails, or
chooses an agent without an answer, leaves the winner (and says why). Everyone votes for b
(agent2)."""

from __future__ import annotations

import trio
import trio.testing

from conclave.actors.coordination.events import FinalAnswerProduced, HumanGateFailed, VotingComplete
from conclave.actors.human.gate import (
    AcceptWinner,
    Choose,
    ChooseAgent,
    OverrideChoice,
    OverrideRequest,
)
from conclave.actors.human.manual import ManualGate
from conclave.actors.run.driver import COORDINATOR, RunSpec, open_run
from conclave.actors.run.result import DecidedBy
from tests.coordination.faults import CrashOnPoke, Poke, crashes
from tests.coordination.helpers import RUN_LIMIT, TASK, WaitingTap, agent, config, run_tapped

CONFIG = config(
    agent("a", seed=1, latency=0.2, vote="agent2"),
    agent("b", seed=2, latency=0.2, vote="agent2"),
    agent("c", seed=3, latency=0.2, vote="agent2"),
)


class Slow:
    """Takes ``seconds`` to decide, then ``choice``; keeps every request it was shown."""

    def __init__(self, seconds: float, choice: OverrideChoice) -> None:
        self.seconds = seconds
        self.choice = choice
        self.requests: list[OverrideRequest] = []

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        self.requests.append(request)
        await trio.sleep(self.seconds)
        return self.choice


class Failing:
    async def override(self, request: OverrideRequest) -> OverrideChoice:
        raise ConnectionError("the dialog's terminal went away")


async def test_a_gate_that_chooses_an_agent_makes_it_present(autojump_clock: object) -> None:
    run = await run_tapped(CONFIG, human=ChooseAgent("c"))

    assert run.result.winner == "b"
    assert run.result.presenter == "c"
    assert run.result.decided_by is DecidedBy.OVERRIDE
    assert run.result.final_answer == run.answer_of("c")


async def test_a_gate_that_accepts_keeps_the_winner_as_presenter(autojump_clock: object) -> None:
    run = await run_tapped(CONFIG, human=AcceptWinner())

    assert run.result.presenter == "b"
    assert run.result.decided_by is DecidedBy.VOTES


async def test_the_gate_is_shown_the_winner_the_tally_and_who_may_present(
    autojump_clock: object,
) -> None:
    gate = Slow(1.0, Choose(agent="a"))
    await run_tapped(CONFIG, human=gate)

    [request] = gate.requests
    assert request == OverrideRequest(
        winner="b",
        label="agent2.1",
        tally={"agent2.1": 3},
        answers={"a": "agent1.1", "b": "agent2.1", "c": "agent3.1"},
    )


async def test_a_person_deciding_never_causes_a_timeout(autojump_clock: object) -> None:
    cfg = config(*CONFIG.agents, run_timeout=30.0)

    run = await run_tapped(cfg, human=Slow(1000.0, Choose(agent="c")))

    assert run.result.termination == "completed"
    assert run.result.presenter == "c"
    [final] = run.events(FinalAnswerProduced)
    assert final.at > 1000.0


async def test_the_clock_is_paused_until_the_run_handle_decides(autojump_clock: object) -> None:
    cfg = config(*CONFIG.agents, run_timeout=30.0)
    tap = WaitingTap()
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=cfg, human=ManualGate()), taps=[tap]) as h:
            await tap.wait_for(VotingComplete)
            await trio.sleep(1000.0)
            paused = h.clock.paused
            await h.continue_()
            await trio.testing.wait_all_tasks_blocked()
            resumed = not h.clock.paused
            result = await h.result()

    assert paused
    assert resumed
    assert result.termination == "completed"


async def test_a_failing_gate_leaves_the_winner_and_says_why(autojump_clock: object) -> None:
    run = await run_tapped(CONFIG, human=Failing())

    [failed] = run.events(HumanGateFailed)
    assert failed.error == "the human gate failed: ConnectionError: the dialog's terminal went away"
    assert run.result.presenter == "b"
    assert run.result.termination == "completed"


async def test_a_gate_choosing_an_agent_without_an_answer_leaves_the_winner(
    autojump_clock: object,
) -> None:
    run = await run_tapped(CONFIG, human=ChooseAgent("nobody"))

    [failed] = run.events(HumanGateFailed)
    assert "'nobody', which has no answer (agents with one: a, b, c)" in failed.error
    assert run.result.presenter == "b"


async def test_a_coordinator_restarted_in_the_window_asks_the_gate_again(
    autojump_clock: object,
) -> None:
    gate = Slow(10.0, Choose(agent="a"))
    tap = WaitingTap()
    spec = RunSpec(task=TASK, config=CONFIG, human=gate, faults=CrashOnPoke())
    with trio.fail_after(RUN_LIMIT):
        async with open_run(spec, taps=[tap]) as h:
            await tap.wait_for(VotingComplete)
            await trio.sleep(1.0)
            h.system.tell_nowait(COORDINATOR, Poke())
            result = await h.result()

    assert len(crashes(tap.events, COORDINATOR)) == 1
    assert len(gate.requests) == 2
    assert result.presenter == "a"
    assert result.decided_by is DecidedBy.OVERRIDE
