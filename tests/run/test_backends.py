"""Agents' backends come from a backend pool: the run's own, or one handed to it that
outlives the run (the REPL's, a batch's), where each agent keeps its backend across runs."""

from __future__ import annotations

from conclave.actors.llm.pool import open_backends
from conclave.actors.run.driver import RunSpec, drive
from conclave.actors.run.result import Termination
from tests.coordination.helpers import TASK, agents, config

CFG = config(*agents(3, latency=1.0))


async def test_the_agents_backends_come_from_the_pool_handed_to_the_run(
    autojump_clock: object,
) -> None:
    async with open_backends() as pool:
        result = await drive(RunSpec(task=TASK, config=CFG, backends=pool))

        assert result.termination is Termination.COMPLETED
        assert pool.statistics().backends == 3


async def test_a_pool_handed_to_the_run_stays_open_after_it(autojump_clock: object) -> None:
    async with open_backends() as pool:
        await drive(RunSpec(task=TASK, config=CFG, backends=pool))

        await pool.backend(CFG.agents[0])  # a closed pool raises here
        assert pool.statistics().endpoints == 3


async def test_a_second_run_on_one_pool_reuses_each_agents_backend(
    autojump_clock: object,
) -> None:
    async with open_backends() as pool:
        await drive(RunSpec(task=TASK, config=CFG, backends=pool))
        first = [await pool.backend(a) for a in CFG.agents]
        await drive(RunSpec(task="Another task", config=CFG, backends=pool))

        assert [await pool.backend(a) for a in CFG.agents] == first
        assert pool.statistics().backends == 3
