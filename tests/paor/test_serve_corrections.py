"""``conclave serve``: a ``correct`` message reaches the run's PAOR agents; a verdict says
whether it was taken. Real sockets: no ``autojump_clock``."""

from __future__ import annotations

from pathlib import Path

import attrs

from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    LoopKind,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from tests.serve.helpers import connect, serving

CONFIG = ConclaveConfig(
    agents=(AgentConfig(id="p", loop=LoopKind.PAOR, backend=ScriptedBackendConfig(latency=0.3)),),
    orchestrator=OrchestratorConfig(quiet_period=None),
)


async def test_a_correct_message_is_applied_and_the_agent_plans_again(tmp_path: Path) -> None:
    async with serving(tmp_path, config=CONFIG) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single", refinement=False)
        seen = await client.until("paor_state_changed")
        assert seen[-1]["target"] == "planning"
        await client.send(type="correct", run_id=run_id, text="only src/utils", agent="p")
        lines = await client.until("verdict")
        lines += await client.until("result")
    verdict = next(line for line in lines if line["type"] == "verdict")
    assert (verdict["decision"], verdict["accepted"], verdict["error"]) == ("correct", True, None)
    [applied] = [line for line in lines if line["type"] == "correction_applied"]
    assert applied["correction"] == "only src/utils"
    [finished] = [line for line in lines if line["type"] == "paor_finished"]
    assert finished["iterations"] == 2


async def test_a_correction_for_an_unknown_agent_is_refused_saying_why(tmp_path: Path) -> None:
    async with serving(tmp_path, config=CONFIG) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single", refinement=False)
        await client.until("run_started")
        await client.send(type="correct", run_id=run_id, text="x", agent="nobody")
        verdict = (await client.until("verdict"))[-1]
        await client.until("result")
    assert verdict["accepted"] is False
    assert verdict["error"] == "no agent 'nobody' in this run; its agents are: p"


def _slow() -> ConclaveConfig:
    """A second a call: the vote and the presentation after the PAOR round leave time for
    a correction to arrive while the run goes."""
    [agent] = CONFIG.agents
    return attrs.evolve(
        CONFIG, agents=(attrs.evolve(agent, backend=ScriptedBackendConfig(latency=1.0)),)
    )


async def test_a_correction_after_the_agents_last_round_comes_back_as_unused(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, config=_slow()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")  # a vote and a presentation follow
        await client.until("paor_finished")
        await client.send(type="correct", run_id=run_id, text="only src/utils")
        lines = await client.until("result")
    verdict = next(line for line in lines if line["type"] == "verdict")
    assert verdict["accepted"] is True
    [unused] = [line for line in lines if line["type"] == "correction_unused"]
    assert (unused["agent"], unused["correction"]) == ("p", "only src/utils")
    assert not [line for line in lines if line["type"] == "correction_applied"]
