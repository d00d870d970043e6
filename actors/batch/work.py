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
from typing import Any

import attrs

from conclave.actors.llm.cache import CacheStatistics, ResponseCache, cache_scope
from conclave.actors.llm.pool import open_backends
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import Termination
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


RunJob = Callable[[BatchJob, int], Awaitable[JobOutcome]]
"""Runs a job to its end, as the batch's job ``index``, and returns its outcome."""


@asynccontextmanager
async def open_runner(cache_dir: Path | None) -> AsyncIterator[RunJob]:
    """Open a backend pool (with the response cache under ``cache_dir``, if any) and yield
    ``run(job, index)``, which runs jobs on it, any number at once. Cancelled, the run in
    flight ends ``cancelled`` and returns no outcome."""
    node = socket.gethostname()
    cache = ResponseCache(cache_dir) if cache_dir is not None else None
    async with open_backends(cache=cache) as pool:

        async def run_job(job: BatchJob, index: int) -> JobOutcome:
            cache_scope.set(job.cache_scope)  # this task's context: the run inherits it
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
                started = time.time()
                result = await run(spec)
                if result.termination is not Termination.FAILED or attempt > job.retries:
                    break
            judged = None
            if job.judge is not None and result.final_answer is not None:
                verdict = await run(
                    RunSpec(
                        task=job.judge.before + result.final_answer + job.judge.after,
                        config=job.judge.config,
                        backends=pool,
                    )
                )
                judged = verdict.to_json()
            return JobOutcome(
                index=index,
                result=result.to_json(),
                node=node,
                started=started,
                judge=judged,
                attempts=attempt,
                cache=None if cache is None else cache.statistics(),
                pid=os.getpid(),
            )

        yield run_job


@attrs.frozen(kw_only=True)
class BatchWork:
    """Runs ``jobs`` by index; see the module docstring."""

    jobs: Sequence[BatchJob]
    cache_dir: Path | None = None
    """``--cache``: where recorded replies are kept (:mod:`actors.llm.cache`); ``None``: no
    cache."""

    @asynccontextmanager
    async def open(self, report: Report) -> AsyncIterator[Callable[[int], Awaitable[None]]]:
        """Open the backend pool the runs share, and yield ``run_job(i)``: it runs job ``i``
        and reports its outcome. Cancelled, the run in flight ends ``cancelled`` and is not
        reported (it runs again on resume)."""
        async with open_runner(self.cache_dir) as run_job:

            async def run_by_index(index: int) -> None:
                report(await run_job(self.jobs[index], index))

            yield run_by_index
