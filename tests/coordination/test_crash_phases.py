"""Crash each of the run's actors at each phase of a run: the run completes, and with the
winner the votes chose. Everyone votes for b (agent2), so b presents; ``agent`` is a, an
agent that does not present. The crash comes right after the actor handles a poke sent when
the phase has begun, so it lands while the phase's work is in flight."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from conclave.actors.agent.events import LlmRequestStarted, RoundStarted
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import VoteAdded, VotingComplete
from conclave.actors.human.manual import ManualGate
from conclave.actors.run.driver import BUS, COORDINATOR, RunSpec, open_run
from conclave.actors.run.result import DecidedBy, RunResult
from conclave.runtime import Address, ChildExited
from tests.coordination.faults import CrashOnPoke, Poke, crashes
from tests.coordination.helpers import RUN_LIMIT, TASK, WaitingTap, agent, config

CFG = config(
    agent("a", seed=1, latency=1.0, vote="agent2"),
    agent("b", seed=2, latency=1.0, vote="agent2"),
    agent("c", seed=3, latency=1.0, vote="agent2"),
)

AGENT = agent_address("a")
PRESENTER = agent_address("b")

PhaseStart = tuple[type[Any], Callable[[Any], bool] | None]
PHASES: dict[str, PhaseStart] = {
    "answering": (RoundStarted, None),
    "voting": (VoteAdded, None),
    "override window": (VotingComplete, None),
    "presenting": (LlmRequestStarted, lambda e: e.purpose == "present"),
}


async def _crash_during(phase: str, actor: Address) -> tuple[WaitingTap, RunResult]:
    tap = WaitingTap()
    override = phase == "override window"
    human = ManualGate() if override else None
    spec = RunSpec(task=TASK, config=CFG, human=human, faults=CrashOnPoke())
    with trio.fail_after(RUN_LIMIT):
        async with open_run(spec, taps=[tap]) as handle:
            await tap.wait_for(*PHASES[phase])
            handle.system.tell_nowait(actor, Poke())
            if override:
                await tap.wait_for(ChildExited, lambda e: e.child == str(actor) and e.error)
                await handle.continue_()
            result = await handle.result()
    return tap, result


def _completed_as_voted(tap: WaitingTap, actor: Address, result: RunResult) -> None:
    assert len(crashes(tap.events, actor)) == 1
    assert result.termination == "completed"
    assert result.winner == "b"
    assert result.decided_by is DecidedBy.VOTES
    assert result.final_answer == next(a.content for a in result.answers if a.agent == "b")
    assert result.presenter == "b"
    assert result.failed_agents == {}


@pytest.mark.parametrize("phase", list(PHASES))
async def test_a_coordinator_crash_in_any_phase_still_completes_with_the_right_winner(
    autojump_clock: object, phase: str
) -> None:
    tap, result = await _crash_during(phase, COORDINATOR)
    _completed_as_voted(tap, COORDINATOR, result)


@pytest.mark.parametrize("phase", list(PHASES))
async def test_a_bus_crash_in_any_phase_still_completes_with_the_right_winner(
    autojump_clock: object, phase: str
) -> None:
    tap, result = await _crash_during(phase, BUS)
    _completed_as_voted(tap, BUS, result)


@pytest.mark.parametrize("phase", list(PHASES))
async def test_an_agent_crash_in_any_phase_still_completes_with_the_right_winner(
    autojump_clock: object, phase: str
) -> None:
    tap, result = await _crash_during(phase, AGENT)
    _completed_as_voted(tap, AGENT, result)


@pytest.mark.parametrize("phase", list(PHASES))
async def test_a_presenter_crash_in_any_phase_still_completes_with_the_right_winner(
    autojump_clock: object, phase: str
) -> None:
    tap, result = await _crash_during(phase, PRESENTER)
    _completed_as_voted(tap, PRESENTER, result)
