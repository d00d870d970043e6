"""Batch engines: where a batch's runs execute. The seam between ``conclave batch`` (which
reads tasks, writes RESULTS and decides when to stop) and whatever runs the jobs.

Every engine takes the same :class:`~actors.batch.work.BatchWork` and reports each finished
job to the caller's process, which is the only writer of RESULTS. Two engines here:

* :class:`LocalEngine`: lanes in this process's trio loop, one backend pool for every run.
* :class:`WorkerEngine`: N worker processes (one trio loop each, so N cores), each with its
  lanes and its own pool, claiming jobs from one shared counter; outcomes come back over a
  pipe per worker.

A remote engine (Ray) implements the same protocol: run the jobs, report outcomes, stop
starting on request, halt on request.
"""

from __future__ import annotations

import multiprocessing
import pickle
import signal
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Protocol

import attrs
import trio

from conclave.actors.batch.claims import Counter, SharedCounter
from conclave.actors.batch.lanes import run_lanes
from conclave.actors.batch.outcome_pipe import OutcomeReceiver, send_outcome
from conclave.actors.batch.work import BatchWork, Report
from conclave.actors.batch.worker import worker_main
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = [
    "HALT_GRACE_S",
    "BatchEngine",
    "LocalEngine",
    "WorkerEngine",
    "WorkerLost",
    "run_worker",
    "split_slots",
]

HALT_GRACE_S = 10.0
"""How long a halted worker process may take to cancel its runs and exit before it is
killed: a bound on Ctrl+C, as a supervisor's shutdown timeout is."""


class BatchEngine(Protocol):
    """Runs a batch's jobs and reports each outcome to the caller.

    ``run`` returns once every job has run, or once the engine was told to stop starting
    (then after the runs in flight have finished and been reported) or to halt (then
    promptly, the runs in flight cancelled and not reported: an interrupted run is never
    written). Cancelling ``run`` itself abandons everything at once.
    """

    lost: list[str]
    """One line per part of the engine that ended without finishing its jobs (a worker
    process that died): its runs in flight were not reported."""

    async def run(self, work: BatchWork, report: Report) -> None: ...

    def stop_starting(self) -> None:
        """Start no more jobs; the ones running finish and are reported."""
        ...

    def halt(self) -> None:
        """Start no more jobs and cancel the running ones (not reported)."""
        ...


def split_slots(concurrency: int, workers: int) -> list[int]:
    """``concurrency`` lanes over ``workers`` processes, as evenly as possible (every worker
    gets at least one)."""
    return [
        max(1, concurrency // workers + (1 if w < concurrency % workers else 0))
        for w in range(workers)
    ]


class LocalEngine:
    """Lanes in the calling trio loop; see the module docstring."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self._counter: Counter | None = None
        self._halt = trio.CancelScope()
        self._stopped = False
        self.lost: list[str] = []
        """Always empty: a crash here is the batch's own."""

    async def run(self, work: BatchWork, report: Report) -> None:
        self._counter = Counter(len(work.jobs))
        if self._stopped:
            self._counter.close()
        with self._halt:
            async with work.open(report) as run_job:
                await run_lanes(self.concurrency, self._counter, run_job)

    def stop_starting(self) -> None:
        self._stopped = True
        if self._counter is not None:
            self._counter.close()

    def halt(self) -> None:
        self.stop_starting()
        self._halt.cancel()


class WorkerLost(Exception):
    """A worker process ended without finishing its part (killed, or crashed)."""


@attrs.frozen(kw_only=True)
class _Worker:
    process: BaseProcess
    outcomes: Connection


class WorkerEngine:
    """Worker processes claiming from one shared counter; see the module docstring.

    Outcomes are read from each worker's pipe in the trio loop (see
    :mod:`actors.batch.outcome_pipe`) and reported there. A worker that dies loses only its
    runs in flight: they were never reported, so they run again on resume; :attr:`lost`
    says which workers died and how.
    """

    def __init__(self, concurrency: int, workers: int) -> None:
        self.slots = split_slots(concurrency, workers)
        self._context = multiprocessing.get_context("spawn")
        self._counter: SharedCounter | None = None
        self._workers: list[_Worker] = []
        self._stopped = False
        self._halted = False
        self.lost: list[str] = []
        """One line per worker that ended without finishing (its exit code)."""

    async def run(self, work: BatchWork, report: Report) -> None:
        counter = self._counter = SharedCounter(len(work.jobs), self._context)
        if self._stopped:
            counter.close()
        batch = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)  # once, for every worker
        # Started with SIGINT ignored, which a new interpreter keeps: Ctrl+C reaches every
        # process of the terminal's group, and a worker still importing would die of it.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for slots in self.slots:
                receiving, sending = self._context.Pipe(duplex=False)
                process = self._context.Process(
                    target=worker_main, args=(batch, slots, counter, sending), daemon=True
                )
                process.start()
                sending.close()  # the worker holds the only sending end: EOF when it exits
                self._workers.append(_Worker(process=process, outcomes=receiving))
        finally:
            signal.signal(signal.SIGINT, previous)
        if self._halted:
            self.halt()
        try:
            async with trio.open_nursery() as nursery:
                for worker in self._workers:
                    nursery.start_soon(self._receive, worker, report)
        finally:
            for worker in self._workers:  # only a cancelled run finds them alive here
                if worker.process.is_alive():
                    worker.process.kill()
                worker.process.join()
                worker.outcomes.close()

    async def _receive(self, worker: _Worker, report: Report) -> None:
        async with OutcomeReceiver(worker.outcomes.fileno()) as outcomes:
            while (outcome := await outcomes.receive()) is not None:
                report(outcome)
        await trio.to_thread.run_sync(worker.process.join, abandon_on_cancel=True)
        code = worker.process.exitcode
        if code != 0 and not self._halted:
            self.lost.append(f"worker process {worker.process.pid} ended with exit code {code}")

    def stop_starting(self) -> None:
        self._stopped = True
        if self._counter is not None:
            self._counter.close()

    def halt(self) -> None:
        """Stop the workers: each gets SIGTERM, cancels its runs and exits; one still alive
        after :data:`HALT_GRACE_S` is killed. Outcomes already sent are still reported."""
        self.stop_starting()
        self._halted = True
        for worker in self._workers:
            if worker.process.is_alive() and worker.process.pid is not None:
                worker.process.terminate()
        if self._workers:
            trio.lowlevel.spawn_system_task(self._kill_stragglers)

    async def _kill_stragglers(self) -> None:
        await trio.sleep(HALT_GRACE_S)
        for worker in self._workers:
            if worker.process.is_alive():
                worker.process.kill()


def run_worker(work: BatchWork, slots: int, claims: SharedCounter, outcomes: Connection) -> None:
    """The body of a worker process (:func:`actors.batch.worker.worker_main`): ``slots`` lanes
    claiming from ``claims``, each outcome sent back on ``outcomes``; SIGTERM cancels the
    runs in flight and ends it."""
    tune_gc_for_actors()
    try:
        trio.run(_worker, work, slots, claims, partial(send_outcome, outcomes.fileno()))
    finally:
        outcomes.close()


async def _worker(work: BatchWork, slots: int, claims: SharedCounter, send: Report) -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def on_sigterm() -> None:
                async for _ in signals:
                    claims.close()
                    nursery.cancel_scope.cancel()

            nursery.start_soon(on_sigterm)
            async with work.open(send) as run_job:
                await run_lanes(slots, claims, run_job)
            nursery.cancel_scope.cancel()
