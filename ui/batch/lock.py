"""One writer per RESULTS file: two batches appending to one ``--out`` would both see the
same tasks as not run yet and run them twice.

The lock is an advisory ``flock`` on a file beside RESULTS (``RESULTS.lock``) that holds its
holder's pid and host, so a refused batch can say who has it. The kernel releases a
``flock`` when its holder exits however it exits (``kill -9`` included), so a lock file left
behind by a crash never blocks anyone: only a live holder does. The lock file is removed on
release; a batch that takes the lock checks that the file it locked is still the one at the
path (a holder may have removed it between our open and our lock), and tries again if not.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path

import attrs

__all__ = ["ResultsLock", "ResultsLocked", "lock_path", "lock_results"]


def lock_path(results: Path) -> Path:
    return results.with_name(results.name + ".lock")


class ResultsLocked(Exception):
    """Another live process holds the lock; the message names it."""

    def __init__(self, results: Path, holder: str) -> None:
        super().__init__(holder)
        self.results = results
        self.holder = holder


@attrs.define
class ResultsLock:
    """A held lock; :meth:`release` it (the process's exit releases it too)."""

    path: Path
    fd: int

    def release(self) -> None:
        """Remove the lock file, then unlock: a batch that opened it meanwhile finds it is
        no longer the one at the path, and locks a new one."""
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)


def _holder(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {int(data['pid'])} on host {data['host']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"


def lock_results(results: Path) -> ResultsLock:
    """Take the lock of ``results``. Raises :class:`ResultsLocked` naming the live holder,
    or ``OSError`` when the lock file cannot be made."""
    path = lock_path(results)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise ResultsLocked(results, holder) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if not same:  # its holder removed it between our open and our lock
            os.close(fd)
            continue
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, me, 0)
        return ResultsLock(path=path, fd=fd)
