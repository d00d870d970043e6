"""A correction from the user reaches a running PAOR agent through the run's handle: it is
recorded as ``CorrectionApplied`` and the agent plans again with it before completing."""

from __future__ import annotations

import pytest
from trio.testing import MockClock

from conclave.actors.paor.events import CorrectionApplied, PaorFinished, PaorStateChanged
from conclave.actors.paor.state import PaorPhase
from conclave.actors.run.driver import RunSpec, open_run
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    LoopKind,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from tests.coordination.helpers import WaitingTap

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
