"""The standard streams when they fail: closed before the command started, or full.

A standard stream closed before the command started (``>&-``, ``2>&-``) is ``None`` in
Python: a write to it crashed the command, and ``print`` to a ``None`` stderr wrote to
stdout. :func:`stand_in_for_closed_streams` (called by the entry point, first of all) puts a
:class:`ClosedStream` in its place. Standard library only: it runs before the command loads.

A command whose output is the point (a run's result, a listing, a timeline, a converted
config) writes it with :func:`write_stdout` (all at once) or :func:`write_out` (as it goes):
a stdout closed before the command started, or failing (``> /dev/full``), is then said on
stderr by :func:`cannot_write` and the command exits 1, never 0 with nothing written nor
"internal error". A reader that left (``| head``) is no error: the command ends quietly.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

from conclave.ui.exit_codes import ExitCode

__all__ = [
    "ClosedStream",
    "StdoutFailed",
    "cannot_write",
    "discard_stdout",
    "stand_in_for_closed_streams",
    "stdout_is_closed",
    "write_out",
    "write_stdout",
]


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


class StdoutFailed(Exception):
    """Stdout cannot take what the command writes: ``why`` is ``"it is closed"`` (closed
    before the command started) or the OS's reason (``No space left on device``)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def write_out(text: str, *, flush: bool = True) -> None:
    """Write ``text`` to stdout, and flush unless ``flush`` is false (a command writing many
    lines flushes with its last). Raises :class:`StdoutFailed` when stdout is closed or
    failing (then pointed at /dev/null, so Python's flush at exit does not fail again); a
    reader that left raises ``BrokenPipeError``, which ends the command quietly (ui/cli.py)."""
    if stdout_is_closed():
        raise StdoutFailed("it is closed")
    try:
        sys.stdout.write(text)
        if flush:
            sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        discard_stdout()
        raise StdoutFailed(str(exc.strerror or exc)) from None


def write_stdout(text: str, *, end: str = "\n") -> str | None:
    """Write ``text`` and ``end`` to stdout, and flush: ``None`` when written, or when its
    reader left (then stdout points at /dev/null and the command goes on to its own exit
    code); else why stdout could not take it, for :func:`cannot_write`."""
    try:
        write_out(text + end)
    except BrokenPipeError:
        discard_stdout()
    except StdoutFailed as exc:
        return exc.why
    return None


def cannot_write(command: str, what: str, why: str, *, then: str | None = None) -> int:
    """Say on stderr that ``command`` could not write ``what`` to stdout and ``why``, and
    ``then`` what the user can do or where it is instead; the exit code to end with (1)."""
    more = f"; {then}" if then else ""
    print(f"{command}: cannot write {what} to stdout ({why}){more}", file=sys.stderr)
    return ExitCode.FAILED
