"""The lane driver and the engines (actors/batch): every job claimed once, stopping starts
nothing new, halting cancels what runs and reports none of it."""

from __future__ import annotations

import multiprocessing
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from conclave.actors.batch import work as work_module
from conclave.actors.batch.claims import Counter, SharedCounter
from conclave.actors.batch.engine import LocalEngine, split_slots
from conclave.actors.batch.lanes import run_lanes
from conclave.actors.batch.work import BatchJob, BatchWork, JobOutcome
from conclave.actors.run import driver
from conclave.actors.run.driver import RunSpec
from conclave.actors.run.result import RunResult
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig


async def test_lanes_run_every_claimed_index_once_at_most_slots_at_a_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ran: list[int] = []
    running = peak = 0

    async def work(i: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await trio.sleep(1 + i % 3)
        running -= 1
        ran.append(i)

    await run_lanes(3, Counter(10), work)

    assert sorted(ran) == list(range(10))
    assert peak == 3


async def test_a_closed_counter_lets_the_jobs_in_flight_finish_and_starts_no_more(
    autojump_clock: trio.testing.MockClock,
) -> None:
    counter = Counter(100)
    ran: list[int] = []

    async def work(i: int) -> None:
        if i == 1:
            counter.close()
        await trio.sleep(1)
        ran.append(i)

    await run_lanes(2, counter, work)

    assert sorted(ran) == [0, 1]


def test_a_shared_counter_hands_each_index_out_once_until_closed() -> None:
    counter = SharedCounter(3, multiprocessing.get_context("spawn"))

    assert [counter.claim(), counter.claim()] == [0, 1]
    counter.close()
    assert counter.claim() is None
    assert counter.claimed == 3


def test_slots_are_split_evenly_over_workers_and_each_gets_one() -> None:
    assert split_slots(50, 2) == [25, 25]
    assert split_slots(7, 3) == [3, 2, 2]
    assert split_slots(1, 1) == [1]


def _jobs(n: int, latency: float) -> BatchWork:
    agent = AgentConfig(id="a", backend=ScriptedBackendConfig(seed=1, latency=latency))
    config = ConclaveConfig(agents=(agent,))
    return BatchWork(
        jobs=tuple(BatchJob(key=str(i), task=f"t{i}", config=config) for i in range(n))
    )


async def test_the_local_engine_reports_each_job_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reported: list[JobOutcome] = []

    await LocalEngine(concurrency=3).run(_jobs(5, latency=1.0), reported.append)

    assert sorted(o.index for o in reported) == [0, 1, 2, 3, 4]
    assert {o.result["termination"] for o in reported} == {"completed"}


async def test_jobs_started_together_start_in_the_batchs_order() -> None:
    reported: list[JobOutcome] = []

    await LocalEngine(concurrency=12).run(_jobs(12, latency=0.0), reported.append)

    # A report orders its variants by when their first runs started.
    starts = [o.started for o in sorted(reported, key=lambda o: o.index)]
    assert starts == sorted(starts)


class _Reported:
    """Outcomes as reported; :attr:`two` is set when the second arrives."""

    def __init__(self) -> None:
        self.outcomes: list[JobOutcome] = []
        self.two = trio.Event()

    def __call__(self, outcome: JobOutcome) -> None:
        self.outcomes.append(outcome)
        if len(self.outcomes) == 2:
            self.two.set()


async def test_halting_the_local_engine_cancels_the_runs_in_flight_and_reports_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    engine = LocalEngine(concurrency=2)
    reported = _Reported()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.run, _jobs(10, latency=10.0), reported)
        await reported.two.wait()  # the next two runs are in flight
        engine.halt()

    assert len(reported.outcomes) == 2


async def test_stop_starting_lets_the_runs_in_flight_finish_and_be_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    engine = LocalEngine(concurrency=2)
    reported = _Reported()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.run, _jobs(10, latency=10.0), reported)
        await reported.two.wait()
        engine.stop_starting()

    assert len(reported.outcomes) == 4


class _Timeline:
    """What happened, in order: each run started and returned (``work.run`` wrapped), and
    each outcome reported."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        real = driver.run

        async def run(spec: RunSpec, **rest: Any) -> RunResult:
            self.seen.append(f"start {spec.task}")
            result = await real(spec, **rest)
            self.seen.append(f"returned {spec.task}")
            return result

        monkeypatch.setattr(work_module, "run", run)

    def report(self, outcome: JobOutcome) -> None:
        self.seen.append(f"reported {outcome.index}")


async def test_a_job_is_reported_and_its_lane_takes_the_next_while_its_runs_actors_stop(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeline = _Timeline(monkeypatch)

    await LocalEngine(concurrency=1).run(_jobs(2, latency=1.0), timeline.report)

    seen = timeline.seen
    assert seen.index("reported 0") < seen.index("start t1") < seen.index("returned t0")
    assert seen[-1] == "returned t1"  # the engine returns once every run has stopped


async def test_a_run_to_be_tried_again_keeps_its_lane_until_the_last_try_has_a_result(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = AgentConfig(
        id="a", backend=ScriptedBackendConfig(seed=1, latency=1.0, error_rate=1.0)
    )
    jobs = _jobs(2, latency=1.0).jobs
    work = BatchWork(
        jobs=(
            attrs.evolve(jobs[0], config=ConclaveConfig(agents=(failing,)), retries=1),
            jobs[1],
        )
    )
    timeline = _Timeline(monkeypatch)

    await LocalEngine(concurrency=1).run(work, timeline.report)

    seen = timeline.seen
    assert seen[:4] == ["start t0", "returned t0", "start t0", "reported 0"]
    assert seen.index("start t1") < seen.index("returned t0", 2)
