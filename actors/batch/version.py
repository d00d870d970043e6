"""The Conclave a process runs: a batch and the workers that run its jobs must run the same
one (a worker with another version would run another program, and its results would not be
comparable), so each job carries the batch's version and a worker checks it."""

from __future__ import annotations

import functools
import importlib.metadata

__all__ = ["installed_version", "version_refusal"]


@functools.cache
def installed_version() -> str:
    try:
        return importlib.metadata.version("conclave")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def version_refusal(wanted: str, node: str) -> str | None:
    """Why this process may not run a job of a batch running Conclave ``wanted`` (``""``:
    no check), or ``None``."""
    installed = installed_version()
    if not wanted or wanted == installed:
        return None
    return (
        f"the Ray worker on {node} runs Conclave {installed}, this batch {wanted}; install "
        f"the same version on every node (pip install -e . in Conclave's source tree at {wanted}; "
        "PyPI's conclave is another project)"
    )
