"""The seam between the tools and where their shell commands run.

A sandbox is an object owned by the run (not an actor): ``open_sandbox`` opens one per agent
and closes it however the run ends. The tools executor calls ``run_shell``; the presentation
phase calls ``remount`` to make writable context paths writable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import attrs

from conclave.config.schema.sandbox import SandboxKind

__all__ = [
    "NO_RUN_DIRS",
    "Mount",
    "RunDirs",
    "Sandbox",
    "SandboxKind",
    "SandboxUnavailable",
    "ShellOutcome",
]


@attrs.frozen(kw_only=True)
class Mount:
    """A host path the sandbox exposes at the same path inside."""

    path: Path
    writable: bool


@attrs.frozen(kw_only=True)
class RunDirs:
    """The run's own directories, as every agent's sandbox shows them. Unlike the context
    paths' mounts they never change (a remount keeps them), and they are the same for every
    agent. Each is exposed at its host path; one that does not exist (yet) is left out."""

    shared: tuple[Path, ...] = ()
    """Read-only in every sandbox: the answer snapshots (``snapshots/``), where a snapshot
    appears (a rename) as soon as its answer is accepted."""
    hidden: tuple[Path, ...] = ()
    """Covered by an empty, read-only directory: the event log's directory, the agents' live
    workspaces, the copies being staged. A shared path or the agent's own workspace inside one
    is still exposed (the deeper mount wins)."""


NO_RUN_DIRS = RunDirs()
"""A sandbox outside a run (the ``conclave sandbox`` commands, tests): nothing to share or
hide."""


@attrs.frozen(kw_only=True)
class ShellOutcome:
    exit_code: int | None
    """``None`` when the command was killed (timeout or cancellation)."""
    output: str
    """stdout and stderr interleaved as the shell produced them, capped."""
    timed_out: bool
    duration: float
    truncated_bytes: int = 0


class SandboxUnavailable(Exception):
    """The sandbox cannot be opened here (no docker engine, no image); the message says
    what to do."""


class Sandbox(Protocol):
    async def run_shell(self, command: str, *, cwd: Path, timeout: float) -> ShellOutcome:
        """Run ``command`` with ``sh -c`` in ``cwd``; kill it whole after ``timeout`` seconds.

        Cancellation kills the command (and everything it started) before it propagates.
        """
        ...

    async def remount(self, mounts: tuple[Mount, ...]) -> None:
        """Change which extra paths are visible/writable (docker: recreate the container)."""
        ...

    async def aclose(self) -> None:
        """Release everything the sandbox holds; idempotent, bounded, safe under cancellation."""
        ...

    def refusal(self) -> str | None:
        """Why run_shell cannot run at all here (e.g. local without bubblewrap while
        read-only context paths exist), or None. A reason, not a sentence about run_shell:
        the caller says what was refused; ``run_shell`` raises ``PermissionError`` if called
        anyway."""
        ...
