"""A correction from the user reaches a running PAOR agent through the run's handle: it is
recorded as ``CorrectionApplied`` and the agent plans again with it before completing. One
that comes after a round ended waits for the agent's next PAOR round; if the run ends first,
it is recorded as ``CorrectionUnused``: never dropped without a word."""

from __future__ import annotations

import attrs
import pytest
from trio.testing import MockClock

from conclave.actors.agent.events import RoundStarted
from conclave.actors.coordination.events import VotingComplete
from conclave.actors.paor.corrections import NoRoundLeft
from conclave.actors.paor.events import (
    CorrectionApplied,
    CorrectionUnused,
    PaorFinished,
    PaorStateChanged,
)
from conclave.actors.paor.state import PaorPhase
from conclave.actors.run.driver import RunSpec, open_run
from conclave.actors.run.events import RunEnded
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    LoopKind,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.ui.timeline import describe
from tests.coordination.helpers import WaitingTap
from tests.paor.helpers import panel_without_voting

TASK = "rename old_total to compute_total"


def _config() -> ConclaveConfig:
    agent = AgentConfig(id="p", loop=LoopKind.PAOR, backend=ScriptedBackendConfig(latency=1.0))
    return ConclaveConfig(agents=(agent,), orchestrator=OrchestratorConfig(quiet_period=None))


async def test_a_correction_is_applied_and_the_agent_plans_again_with_it(
    autojump_clock: MockClock,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=_config()), taps=[tap]) as handle:
        await tap.wait_for(PaorStateChanged, lambda e: e.target is PaorPhase.ACTING)
        handle.correct("search only in src/utils", agent="p")
        await handle.result()
    [applied] = tap.of_type(CorrectionApplied)
    assert (applied.agent, applied.iteration, applied.correction) == (
        "p",
        1,
        "search only in src/utils",
    )
    [finished] = tap.of_type(PaorFinished)
    assert finished.iterations == 2
    plans = [e for e in tap.of_type(PaorStateChanged) if e.target is PaorPhase.PLANNING]
    assert [e.iteration for e in plans] == [1, 2]
    assert plans[1].at > applied.at


async def test_a_correction_for_an_agent_the_run_lacks_is_refused_naming_them(
    autojump_clock: MockClock,
) -> None:
    async with open_run(RunSpec(task=TASK, config=_config())) as handle:
        with pytest.raises(ValueError, match="no agent 'q' in this run; its agents are: p"):
            handle.correct("x", agent="q")
        with pytest.raises(ValueError, match="a correction needs some text"):
            handle.correct("  ")
        handle.cancel()


async def test_a_correction_that_comes_during_the_reflection_is_planned_with_before_completing(
    autojump_clock: MockClock,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=_config()), taps=[tap]) as handle:
        await tap.wait_for(PaorStateChanged, lambda e: e.target is PaorPhase.REFLECTING)
        handle.correct("search only in src/utils", agent="p")
        await handle.result()
    [applied] = tap.of_type(CorrectionApplied)
    assert applied.iteration == 1
    [finished] = tap.of_type(PaorFinished)
    assert finished.iterations == 2
    assert tap.of_type(CorrectionUnused) == []


async def test_a_correction_that_comes_after_the_agents_last_paor_round_is_reported_unused(
    autojump_clock: MockClock,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=_config()), taps=[tap]) as handle:
        await tap.wait_for(PaorFinished)
        handle.correct("search only in src/utils")
        await handle.result()
    assert tap.of_type(CorrectionApplied) == []
    [unused] = tap.of_type(CorrectionUnused)
    assert (unused.agent, unused.correction) == ("p", "search only in src/utils")
    [ended] = tap.of_type(RunEnded)
    assert unused.at <= ended.at
    assert "correction not used" in (describe(unused) or "")


async def test_a_correction_that_comes_after_a_round_ended_reaches_the_agents_next_paor_round(
    autojump_clock: MockClock,
) -> None:
    tap = WaitingTap()
    spec = RunSpec(task=TASK, config=panel_without_voting())
    async with open_run(spec, taps=[tap]) as handle:
        await tap.wait_for(PaorFinished)
        handle.correct("search only in src/utils", agent="p")
        await handle.result()
    [applied] = tap.of_type(CorrectionApplied)
    second = [e for e in tap.of_type(RoundStarted) if e.agent == "p"][1]
    assert applied.at >= second.at
    assert tap.of_type(CorrectionUnused) == []


async def test_a_correction_after_the_run_ended_is_refused_as_too_late(
    autojump_clock: MockClock,
) -> None:
    async with open_run(RunSpec(task=TASK, config=_config())) as handle:
        await handle.result()
    with pytest.raises(ValueError, match="the run has ended: the correction came too late"):
        handle.correct("search only in src/utils")


async def test_a_correction_for_an_agent_that_does_not_run_paor_is_refused(
    autojump_clock: MockClock,
) -> None:
    free = attrs.evolve(_config().agents[0], id="f", loop=LoopKind.FREE)
    config = attrs.evolve(_config(), agents=(*_config().agents, free))
    async with open_run(RunSpec(task=TASK, config=config)) as handle:
        with pytest.raises(ValueError, match="agent 'f' does not run PAOR"):
            handle.correct("x", agent="f")
        handle.cancel()


async def test_a_correction_in_a_run_without_paor_agents_is_refused(
    autojump_clock: MockClock,
) -> None:
    config = attrs.evolve(
        _config(), agents=tuple(attrs.evolve(a, loop=LoopKind.FREE) for a in _config().agents)
    )
    async with open_run(RunSpec(task=TASK, config=config)) as handle:
        with pytest.raises(ValueError, match="no agent of this run runs PAOR"):
            handle.correct("x")
        handle.cancel()


async def test_a_correction_once_the_vote_is_decided_is_refused_as_no_round_is_left(
    autojump_clock: MockClock,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=_config()), taps=[tap]) as handle:
        await tap.wait_for(VotingComplete)
        with pytest.raises(NoRoundLeft, match="no PAOR round is left in this run"):
            handle.correct("search only in src/utils")
        await handle.result()
    assert tap.of_type(CorrectionUnused) == []
