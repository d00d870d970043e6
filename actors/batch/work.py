"""What a batch runs: its jobs, and the work of running one of them.

A :class:`BatchJob` is one run to make (a task in one mode, with its config already
resolved); a :class:`JobOutcome` is what comes back when it ended. :class:`BatchWork` runs
jobs by index with one backend pool shared by every run in the process (connections stay
warm), and is picklable, so a worker process or a remote node runs exactly the same code as
the batch's own process.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from conclave.actors.llm.cache import CacheStatistics, ResponseCache, cache_scope
from conclave.actors.llm.pool import open_backends
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.run.turn import Turn
from conclave.config.modes import CollaborationMode
from conclave.config.schema import ConclaveConfig

__all__ = ["BatchJob", "BatchWork", "JobOutcome", "JudgeRequest", "Report", "RunJob", "open_runner"]


@attrs.frozen(kw_only=True)
class JudgeRequest:
    """A model-graded job's judge: once the run has an answer, a run of ``config`` on the
    task ``before + answer + after`` (the batch's process wrote the rest of the prompt, and
    reads the verdict). It runs in the job, so it shares the job's backend pool and engine."""

    config: ConclaveConfig
    before: str
    after: str


@attrs.frozen(kw_only=True)
class BatchJob:
    """One run of a batch: a task line in one mode."""

    key: str
    """Unique in the batch: the line's id and the mode's name."""
    task: str
    config: ConclaveConfig
    """After flags, the mode's overrides and the line's own overrides."""
    mode: CollaborationMode = CollaborationMode.DEFAULT
    log_dir: Path | None = None
    history: tuple[Turn, ...] = ()
    """Earlier turns of the conversation (a chat input)."""
    cache_scope: str = ""
    """With a response cache, what keeps this job's replies apart from an equal job's (the
    epoch: :data:`actors.llm.cache.cache_scope`)."""
    conclave_version: str = ""
    """The batch's Conclave: a Ray worker running another refuses the job (``""``: no
    check)."""
    retries: int = 0
    """How many more times a run that ends ``failed`` is tried (``--retries``); the last
    try is the one reported."""
    judge: JudgeRequest | None = None


@attrs.frozen(kw_only=True)
class JobOutcome:
    """A job that ran to its end (an interrupted run has no outcome)."""

    index: int
    """The job's index in the batch's job list."""
    result: dict[str, Any]
    """``RunResult.to_json()``: what ``conclave run --output-format json`` prints."""
    node: str
    """The host that ran it."""
    started: float
    """Wall-clock time (``time.time()``) the run started, for the batch's rate."""
    judge: dict[str, Any] | None = None
    """The judge's ``RunResult.to_json()``, when the job had one and the run an answer."""
    attempts: int = 1
    """How many times it ran: more than one when a failed run was retried."""
    cache: CacheStatistics | None = None
    """With a response cache: its hits and misses in the reporting process so far (the
    newest outcome of each process holds that process's totals)."""
    pid: int = 0
    """The process that ran it."""


def _attempt_dir(log_dir: Path | None, attempt: int) -> Path | None:
    """A retry's own log directory beside the first's (an event log is created once)."""
    if log_dir is None or attempt == 1:
        return log_dir
    return log_dir.with_name(f"{log_dir.name}-retry{attempt - 1}")


Report = Callable[[JobOutcome], None]
"""Where outcomes go: called once per finished job, in the process that writes RESULTS."""


class RunJob(Protocol):
    """Runs a job to its end, as the batch's job ``index``, and returns its outcome.
    ``on_outcome`` is told that outcome as soon as the job's last run has its result, before
    that run's actors have stopped: only stopping them is left of the job then (see
    :class:`BatchWork`). ``claimed_at`` is when the job was handed out (its first run's
    ``started``; default: when that run starts)."""

    async def __call__(
        self,
        job: BatchJob,
        index: int,
        *,
        on_outcome: Callable[[JobOutcome], None] | None = None,
        claimed_at: float | None = None,
    ) -> JobOutcome: ...


@asynccontextmanager
async def open_runner(cache_dir: Path | None) -> AsyncIterator[RunJob]:
    """Open a backend pool (with the response cache under ``cache_dir``, if any) and yield
    ``run(job, index)``, which runs jobs on it, any number at once. Cancelled, the run in
    flight ends ``cancelled`` and returns no outcome."""
    node = socket.gethostname()
    cache = ResponseCache(cache_dir) if cache_dir is not None else None
    async with open_backends(cache=cache) as pool:

        async def run_job(
            job: BatchJob,
            index: int,
            *,
            on_outcome: Callable[[JobOutcome], None] | None = None,
            claimed_at: float | None = None,
        ) -> JobOutcome:
            cache_scope.set(job.cache_scope)  # this task's context: the run inherits it
            told: list[JobOutcome] = []

            def tell(outcome: JobOutcome) -> None:
                told.append(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)

            def outcome(result: RunResult, judged: RunResult | None = None) -> JobOutcome:
                return JobOutcome(
                    index=index,
                    result=result.to_json(),
                    node=node,
                    started=started,
                    judge=None if judged is None else judged.to_json(),
                    attempts=attempt,
                    cache=None if cache is None else cache.statistics(),
                    pid=os.getpid(),
                )

            def if_last(result: RunResult) -> None:
                """Told the job's outcome if ``result`` is its last run's: not a failure to try
                again, and without a judge to run on its answer."""
                retried = result.termination is Termination.FAILED and attempt <= job.retries
                judged = job.judge is not None and result.final_answer is not None
                if not retried and not judged:
                    tell(outcome(result))

            attempt = 0
            while True:  # a failed run is tried again, up to job.retries more times
                attempt += 1
                spec = RunSpec(
                    task=job.task,
                    config=job.config,
                    mode=job.mode,
                    log_dir=_attempt_dir(job.log_dir, attempt),
                    history=job.history,
                    backends=pool,
                )
                started = claimed_at if attempt == 1 and claimed_at is not None else time.time()
                result = await run(spec, on_result=if_last)
                if result.termination is not Termination.FAILED or attempt > job.retries:
                    break
            answer = result.final_answer
            if job.judge is not None and answer is not None:
                main = result
                verdict = await run(
                    RunSpec(
                        task=job.judge.before + answer + job.judge.after,
                        config=job.judge.config,
                        backends=pool,
                    ),
                    on_result=lambda judged: tell(outcome(main, judged)),
                )
                return told[0] if told else outcome(main, verdict)
            # The outcome told stands: stopping the run's actors (if that failed) changes
            # nothing of what it did.
            return told[0] if told else outcome(result)

        yield run_job


class _Told:
    """A job's outcome, once told (the first one told stands), and the lane waiting for it."""

    def __init__(self) -> None:
        self.outcome: JobOutcome | None = None
        self.event = trio.Event()

    def __call__(self, outcome: JobOutcome) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.event.set()


@attrs.frozen(kw_only=True)
class BatchWork:
    """Runs ``jobs`` by index; see the module docstring.

    ``run_job(i)`` (from :meth:`open`) reports job ``i``'s outcome and returns as soon as
    its last run has its result; the job ends beside the next one, as its run's actors stop.
    Stopping them took a run of a busy batch tens of milliseconds (60-70 ms at C = 50 on a
    loaded 2-core machine), in which its lane started nothing, and its result waited to be
    written. C runs are running (not stopping) at a time; what a report decides (stop
    starting at ``--max-cost``) is decided before the lane starts another."""

    jobs: Sequence[BatchJob]
    cache_dir: Path | None = None
    """``--cache``: where recorded replies are kept (:mod:`actors.llm.cache`); ``None``: no
    cache."""

    @asynccontextmanager
    async def open(self, report: Report) -> AsyncIterator[Callable[[int], Awaitable[None]]]:
        """Open the backend pool the runs share, and yield ``run_job(i)``: it runs job ``i``
        until its last run has its result, reports the job's outcome and returns, while that
        run's actors stop. Leaving the block waits for every job started to end. Cancelled,
        the runs in flight end ``cancelled`` and are not reported (they run again on
        resume); an exception from a job cancels the others and propagates."""
        async with open_runner(self.cache_dir) as run_job, trio.open_nursery() as jobs:

            async def job_to_its_end(index: int, told: _Told, claimed_at: float) -> None:
                job = self.jobs[index]
                told(await run_job(job, index, on_outcome=told, claimed_at=claimed_at))

            async def run_by_index(index: int) -> None:
                told = _Told()
                # Its start is when its lane claimed it: lanes claim in the batch's order, but
                # the job's own task may run after a later one's (trio picks), and the report
                # lists variants in the order their first runs started.
                jobs.start_soon(job_to_its_end, index, told, time.time())
                await told.event.wait()
                assert told.outcome is not None
                report(told.outcome)  # here, not inside the run: what it raises is the batch's

            yield run_by_index
