"""The standard streams when they fail: closed before the command started, or full.

A standard stream closed before the command started (``>&-``, ``2>&-``) is ``None`` in
Python: a write to it crashed the command, and ``print`` to a ``None`` stderr wrote to
stdout. :func:`stand_in_for_closed_streams` (called by the entry point, first of all) puts a
:class:`ClosedStream` in its place. Standard library only: it runs before the command loads.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

__all__ = ["ClosedStream", "discard_stdout", "stand_in_for_closed_streams", "stdout_is_closed"]


class ClosedStream(io.TextIOBase):
    """Stands in for ``sys.stdout`` or ``sys.stderr`` when its file descriptor was closed
    before the command started. What is written is dropped, so no command crashes on it;
    a command whose output is the point (a run's result, a listing) asks
    :func:`stdout_is_closed` and says on stderr that it could not write it (exit 1)."""

    encoding = "utf-8"  # what code that asks a standard stream's encoding expects

    def __init__(self, fd: int | None) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)

    def fileno(self) -> int:
        if self._fd is None:
            raise io.UnsupportedOperation("the stream was closed")
        return self._fd  # /dev/null now: see stand_in_for_closed_streams

    def isatty(self) -> bool:
        return False


def stand_in_for_closed_streams() -> None:
    """A closed stdout or stderr becomes a :class:`ClosedStream`, and its file descriptor
    /dev/null: otherwise the first file the command opened would take the number 1 or 2 and
    receive what a child process writes to its stdout or stderr."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is None:
            setattr(sys, name, ClosedStream(_devnull_at(fd)))


def _devnull_at(fd: int) -> int | None:
    """Open /dev/null as ``fd``, if that number is free; ``fd``, or ``None`` if it was not."""
    try:
        os.fstat(fd)
    except OSError:
        pass
    else:
        return None  # something opened since holds the number: leave it be
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)
    except OSError:
        return None
    return fd


def discard_stdout() -> None:
    """Point stdout at /dev/null once writing to it failed, so Python's flush at exit does
    not fail a second time."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def stdout_is_closed() -> bool:
    """Whether stdout was closed before the command started (``conclave run ... >&-``)."""
    return sys.stdout is None or isinstance(sys.stdout, ClosedStream)
