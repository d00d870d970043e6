"""A host process the local sandbox started: waited for without blocking the loop, killed
with its whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import trio

__all__ = ["kill_group", "shell_status", "wait_exit"]


async def wait_exit(child: subprocess.Popen[bytes]) -> int:
    """``child``'s exit status, waited for without blocking the loop: a pidfd where Linux
    has them, else a worker thread (abandoned on cancellation; the caller kills the
    child, and the thread then returns)."""
    if child.returncode is not None:
        return child.returncode
    if not hasattr(os, "pidfd_open"):
        return await trio.to_thread.run_sync(child.wait, abandon_on_cancel=True)
    pidfd = os.pidfd_open(child.pid)
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)
    return child.wait()


def shell_status(status: int) -> int:
    """A ``Popen`` status as a shell reports it: a process killed by signal N is 128 + N."""
    return status if status >= 0 else 128 - status


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid``; nothing to do if all of it had already exited."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
