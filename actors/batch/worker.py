"""A batch worker process's entry point (``conclave batch --workers N``).

Spawning a process writes its target and arguments down a pipe that the child reads as it
unpickles them, importing each class they name on the way, while the parent's write waits:
when the arguments held the batch's jobs, the parent waited for each child to import the
runtime before it could start the next one (the second of two workers started 0.5 s after
the first, on a core the first needed). So a worker is spawned with this module, its claims
and its pipe only, all free of the runtime, and the batch as bytes: the parent starts every
child at once, and each imports the runtime in parallel when it unpickles the batch.
"""

from __future__ import annotations

import pickle
import signal
from multiprocessing.connection import Connection

from conclave.actors.batch.claims import SharedCounter

__all__ = ["worker_main"]


def worker_main(batch: bytes, slots: int, claims: SharedCounter, outcomes: Connection) -> None:
    """A worker process: ``slots`` lanes over the pickled :class:`~actors.batch.work.BatchWork`
    ``batch``, claiming from ``claims``, each outcome sent back on ``outcomes``. SIGINT stays
    ignored (Ctrl+C reaches every process of the terminal's group; the parent decides what
    it means); SIGTERM cancels the runs in flight and ends the worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from conclave.actors.batch.engine import run_worker  # the runtime: see the module docstring

    run_worker(pickle.loads(batch), slots, claims, outcomes)
