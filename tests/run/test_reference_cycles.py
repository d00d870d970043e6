"""A finished run leaves nothing to the cycle collector: a process running run after run
(``conclave serve``, a batch, the REPL) frees each run by reference counting when it ends,
instead of a full collection every few runs freeing hundreds of thousands of objects
(0.5-0.75 s of CPU each, issue 24)."""

from __future__ import annotations

import trio

from conclave.actors.run.driver import RunSpec, open_run, run
from conclave.actors.run.result import Termination
from tests.coordination.helpers import TASK, agents, config
from tests.cyclic_garbage import collector_paused, cyclic_garbage

RUN_CLASSES = {
    "conclave.runtime.system.ActorSystem",
    "conclave.runtime.supervision.Supervisor",
    "conclave.runtime.supervision._Child",
    "conclave.actors.run.handle.RunHandle",
    "conclave.actors.run.usage.UsageTap",
    "conclave.actors.agent.memory.AgentMemory",
    "conclave.actors.agent.actor.AgentActor",
}
"""The run's hubs, and per-agent state only they reached."""


async def _completed_run() -> Termination:
    spec = RunSpec(task=TASK, config=config(*agents(5, latency=1.0), visibility="ring"))
    return (await run(spec)).termination


async def _cancelled_run() -> Termination:
    spec = RunSpec(task=TASK, config=config(*agents(5, latency=60.0)))
    async with open_run(spec) as handle:
        await trio.sleep(1.0)
        handle.cancel()
        return (await handle.result()).termination


async def test_a_completed_run_leaves_none_of_its_state_in_a_reference_cycle(
    autojump_clock: object,
) -> None:
    with collector_paused():
        termination = await _completed_run()
        garbage = cyclic_garbage()

    assert termination is Termination.COMPLETED
    assert not RUN_CLASSES & garbage.keys(), garbage.most_common(20)


async def test_a_cancelled_run_leaves_none_of_its_state_in_a_reference_cycle(
    autojump_clock: object,
) -> None:
    with collector_paused():
        termination = await _cancelled_run()
        garbage = cyclic_garbage()

    assert termination is Termination.CANCELLED
    assert not RUN_CLASSES & garbage.keys(), garbage.most_common(20)
