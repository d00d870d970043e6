"""An agent whose run has ended (timeout, Ctrl+C, failure: ``AgentSetup.halted``) starts
nothing, whatever mail arrives: the run's StopWork may still be queued behind it."""

from __future__ import annotations

import trio
from trio.testing import wait_all_tasks_blocked

from conclave.actors.agent.events import RoundStarted
from conclave.actors.agent.status import AgentStatus
from tests.agent.harness import FakeBackend, answer, open_agent, vote


async def test_an_agent_of_a_run_that_ended_starts_no_round_when_its_task_arrives(
    autojump_clock: object,
) -> None:
    halted = trio.Event()
    halted.set()
    backend = FakeBackend([answer()])
    async with open_agent(backend, halted=halted) as run:
        run.start()
        await wait_all_tasks_blocked()

    assert backend.requests == []
    assert run.tap.of_type(RoundStarted) == []


async def test_an_agent_whose_run_ends_after_it_answered_does_not_start_voting(
    autojump_clock: object,
) -> None:
    halted = trio.Event()
    backend = FakeBackend([answer(), vote()])
    async with open_agent(backend, halted=halted) as run:
        run.start()
        await run.tap.wait_for(RoundStarted)
        await trio.sleep(5.0)  # it has answered, and waits for voting to open
        assert run.memory.status is AgentStatus.ANSWERED
        halted.set()
        run.voting_open()
        await wait_all_tasks_blocked()

    assert len(backend.requests) == 1
