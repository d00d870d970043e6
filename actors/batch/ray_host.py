"""A Ray worker process that runs several of a batch's runs at once: :class:`RunHost`, made
a Ray async actor by :class:`~actors.batch.ray_engine.RayEngine`.

Ray runs an async actor's methods on an asyncio loop (in a thread of the worker's own), up
to the actor's ``max_concurrency`` calls at a time; Conclave's runtime is trio. The host
runs one ``trio.run`` on a thread of its own for the actor's life, with one backend pool
(:func:`~actors.batch.work.open_runner`: connections stay warm from run to run, and one
response cache counts the process's hits); each :meth:`RunHost.run` call hands its job to
that loop and awaits the outcome. Trio's guest mode on Ray's asyncio loop would save the
thread, but would tie the runs' scheduling to a loop that Ray owns and closes on its own
terms; a loop on its own thread is plain ``trio.run``, and ends with the process.

Calls are never cancelled one by one (the engine does not use ``ray.cancel``: see
:mod:`actors.batch.ray_engine`); a host's runs end when its process is killed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import threading
from pathlib import Path

import attrs
import trio

from conclave.actors.batch.ray_logs import pack, scratch_logs
from conclave.actors.batch.version import version_refusal
from conclave.actors.batch.work import BatchJob, JobOutcome, RunJob, open_runner
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["RunHost", "TaskOutcome", "run_remote"]


@attrs.frozen(kw_only=True)
class TaskOutcome:
    """What a host sends back for one job: its outcome and the worker process that ran it."""

    outcome: JobOutcome | None
    """``None`` when the worker refused the job."""
    pid: int
    refused: str | None = None
    """Why the worker would not run it: it runs another Conclave than the batch."""
    logs: bytes | None = None
    """With ``--log-dir``: the run's log directories, packed (:mod:`actors.batch.ray_logs`)."""
    scratch: str | None = None
    """Where the worker wrote them (the result's paths start with it)."""


async def run_remote(run_job: RunJob, job: BatchJob, index: int) -> TaskOutcome:
    """``job`` run to its end by ``run_job`` as the batch's ``index``, its logs packed; or
    refused, without running, when the batch runs another Conclave."""
    refused = version_refusal(job.conclave_version, socket.gethostname())
    if refused is not None:
        return TaskOutcome(outcome=None, pid=os.getpid(), refused=refused)
    with scratch_logs(job) as scratch:
        outcome = await run_job(scratch.job, index)
        root = scratch.root
        logs = None if root is None else await trio.to_thread.run_sync(pack, root)
    return TaskOutcome(
        outcome=outcome,
        pid=os.getpid(),
        logs=logs,
        scratch=None if root is None else str(root),
    )


@attrs.frozen(kw_only=True)
class _Loop:
    """A host's trio loop, as other threads reach it."""

    token: trio.lowlevel.TrioToken
    nursery: trio.Nursery
    run_job: RunJob


class RunHost:
    """Runs jobs in a trio loop on a thread of its own; see the module docstring.

    ``cache_dir`` is the batch's ``--cache`` (a path every node reaches, or ``None``)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        tune_gc_for_actors()
        ready: concurrent.futures.Future[_Loop] = concurrent.futures.Future()

        async def serve() -> None:
            try:
                async with open_runner(cache_dir) as run_job, trio.open_nursery() as nursery:
                    token = trio.lowlevel.current_trio_token()
                    ready.set_result(_Loop(token=token, nursery=nursery, run_job=run_job))
                    await trio.sleep_forever()
            except BaseException as exc:  # the actor's creation fails, saying why
                if not ready.done():
                    ready.set_exception(exc)
                raise

        thread = threading.Thread(target=trio.run, args=(serve,), name="conclave-runs")
        thread.daemon = True  # the loop lives as long as the process: Ray ends it by killing
        thread.start()
        self._loop = ready.result()

    def _submit(self, job: BatchJob, index: int) -> concurrent.futures.Future[TaskOutcome]:
        """Start ``job`` in the trio loop (from any other thread); its future outcome."""
        done: concurrent.futures.Future[TaskOutcome] = concurrent.futures.Future()
        loop = self._loop

        async def body() -> None:
            try:
                done.set_result(await run_remote(loop.run_job, job, index))
            except Exception as exc:  # the caller's to raise: the loop serves other runs
                done.set_exception(exc)

        loop.token.run_sync_soon(loop.nursery.start_soon, body)
        return done

    async def run(self, job: BatchJob, index: int) -> TaskOutcome:
        """The actor's method: ``job`` run in the host's trio loop (:func:`run_remote`)."""
        return await asyncio.wrap_future(self._submit(job, index))

    async def ping(self) -> int:
        """Answers once the actor is up (again, after Ray restarted it): its process id."""
        return os.getpid()
