"""``open_run`` owns the run's whole lifetime: the timeout counts from the run's start and
pauses while a person decides, the result can be awaited again after an interrupted wait,
``run_ended`` is recorded once whichever way the run ends, and a run of 20,000 agents can
be cancelled while it is being spawned."""

from __future__ import annotations

import trio

from conclave.actors.coordination.events import AnswerAdded, RunStarted, VotingComplete
from conclave.actors.human.gate import Accept, OverrideChoice, OverrideRequest
from conclave.actors.run.driver import SPAWNS_PER_CHECKPOINT, RunSpec, open_run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import Termination
from conclave.config.schema import default_config
from tests.coordination.helpers import RUN_LIMIT, TASK, WaitingTap, agent, config


async def test_the_run_timeout_counts_from_the_start_not_from_the_first_wait(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    spec = RunSpec(task=TASK, config=config(agent("slow", latency=60.0), run_timeout=10.0))
    async with open_run(spec, taps=[tap]) as handle:
        await trio.sleep(8.0)
        result = await handle.result()

    assert result.termination is Termination.TIMEOUT
    [ended] = tap.of_type(RunEnded)
    assert ended.at == 10.0


async def test_the_result_can_be_awaited_again_after_an_interrupted_wait(
    autojump_clock: object,
) -> None:
    spec = RunSpec(task=TASK, config=config(agent("a", seed=1, latency=5.0)))
    async with open_run(spec) as handle:
        with trio.move_on_after(1.0):
            await handle.result()
        result = await handle.result()

    assert result.termination is Termination.COMPLETED
    assert result.final_answer is not None


async def test_the_result_is_there_without_waiting_once_the_run_has_ended(
    autojump_clock: object,
) -> None:
    spec = RunSpec(task=TASK, config=config(agent("a", seed=1, latency=1.0)))
    async with open_run(spec) as handle:
        assert handle.outcome is None
        result = await handle.result()
        assert handle.outcome is result


async def test_run_ended_is_recorded_once_when_two_reasons_to_end_come_together(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    cfg = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=60.0))
    async with open_run(RunSpec(task=TASK, config=cfg), taps=[tap]) as handle:
        await tap.wait_for(AnswerAdded)
        handle.cancel()
        handle.fail("a second reason, too late")
        result = await handle.result()

    assert result.termination is Termination.CANCELLED
    assert result.failure_reason is None
    assert [e.termination for e in tap.of_type(RunEnded)] == ["cancelled"]


class _SlowPerson:
    """Reads the override dialog for half a minute, then keeps the winner."""

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        await trio.sleep(30.0)
        return Accept()


async def test_a_person_deciding_for_longer_than_the_timeout_does_not_time_the_run_out(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    cfg = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=1.0), run_timeout=10.0)
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=cfg, human=_SlowPerson()), taps=[tap]) as h:
            result = await h.result()

    assert result.termination is Termination.COMPLETED
    [voted] = tap.of_type(VotingComplete)
    [ended] = tap.of_type(RunEnded)
    assert ended.at - voted.at >= 30.0


async def test_cancelling_while_20000_agents_are_spawned_takes_effect_within_a_few_hundred(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    spec = RunSpec(task=TASK, config=default_config(20_000))
    async with open_run(spec, taps=[tap]) as handle:
        handle.cancel()
        result = await handle.result()
        registered = handle.system.statistics().actors

    assert result.termination is Termination.CANCELLED
    assert registered <= 2 + SPAWNS_PER_CHECKPOINT  # the coordinator, the bus, the agents
    assert tap.of_type(RunStarted) == []
    assert [e.termination for e in tap.of_type(RunEnded)] == ["cancelled"]
