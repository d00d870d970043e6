"""Each Ray run's logs come back to the batch's machine, so ``conclave report`` and
``conclave replay`` work for runs made on other nodes.

A Ray worker writes a run's log directory (``--log-dir``: its event log, transcripts, and
workspace with tools; one directory per try) into a scratch directory of its own, packs it
(a gzipped tar) into the task's reply, and removes the scratch. The batch's process unpacks
it where the run would have written it on this machine, and the result's paths
(``log_dir``, ``workspace_path``) are made to name that place.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.batch.work import BatchJob, JobOutcome

__all__ = ["Scratch", "bring_back", "pack", "scratch_logs"]


@attrs.frozen(kw_only=True)
class Scratch:
    job: BatchJob
    """The job, writing its logs under :attr:`root`."""
    root: Path | None


@contextmanager
def scratch_logs(job: BatchJob) -> Iterator[Scratch]:
    """``job`` with its log directory moved into a scratch directory on this worker,
    removed on the way out (pack it first with :func:`pack`)."""
    if job.log_dir is None:
        yield Scratch(job=job, root=None)
        return
    root = Path(tempfile.mkdtemp(prefix="conclave-ray-logs-"))
    try:
        yield Scratch(job=attrs.evolve(job, log_dir=root / job.log_dir.name), root=root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def pack(root: Path) -> bytes:
    """Everything under ``root`` as a gzipped tar (paths relative to ``root``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name)
    return buffer.getvalue()


def bring_back(outcome: JobOutcome, logs: bytes, scratch: str, log_dir: Path) -> JobOutcome:
    """Unpack ``logs`` beside ``log_dir`` (where the job's logs belong on this machine)
    and make the result's paths under ``scratch`` (the worker's) name them here.
    ``OSError`` when they cannot be written."""
    home = log_dir.parent
    home.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(logs), mode="r:gz") as tar:
        tar.extractall(home, filter="data")  # refuses absolute paths and links out of home
    result: dict[str, Any] = dict(outcome.result)
    for key in ("log_dir", "workspace_path"):
        value = result.get(key)
        if isinstance(value, str) and value.startswith(scratch):
            result[key] = str(home) + value[len(scratch) :]
    return attrs.evolve(outcome, result=result)
