"""A finished run leaves nothing to the cycle collector: a process running run after run
(``conclave serve``, a batch, the REPL) frees each run by reference counting when it ends,
instead of a full collection every few runs freeing hundreds of thousands of objects
(0.5-0.75 s of CPU each, issue 24)."""

from __future__ import annotations

import weakref

import trio

from conclave.actors.events import EventHub
from conclave.actors.run.driver import RunSpec, drive, open_run, run
from conclave.actors.run.handle import RunHandle
from conclave.actors.run.result import Termination
from conclave.runtime import ActorSystem
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


async def test_a_hub_kept_for_the_next_run_keeps_nothing_of_the_run_it_watched(
    autojump_clock: object,
) -> None:
    hub = EventHub()  # the REPL's and a chat's: one hub for a session of runs
    spec = RunSpec(task=TASK, config=config(*agents(5, latency=1.0), visibility="ring"))
    systems: list[weakref.ref[ActorSystem]] = []

    def opened(handle: RunHandle) -> None:
        systems.append(weakref.ref(handle.system))

    with collector_paused(), hub.subscribe_sync(lambda event: None, name="ui"):
        termination = (await drive(spec, hub, on_open=opened)).termination
        hub.subscribe_sync(lambda event: None, name="next turn").close()
        [system] = systems

        assert termination is Termination.COMPLETED
        assert system() is None  # freed at once, by reference counting
