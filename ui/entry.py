"""The ``conclave`` command's entry point: the stop signals are handled before the command's
modules load.

Importing the command (argparse, the config schema, the front ends) takes tens of
milliseconds. A Ctrl+C in that time used to raise ``KeyboardInterrupt`` outside any handler
and print a traceback (exit code 1). Here the import runs inside the handler, and SIGTERM
and SIGHUP raise :class:`Stopped` from the first line on, so a signal at any moment of
start-up ends the command quietly with its documented code (130, or 143 for SIGTERM). This
module imports nothing but the standard library's smallest parts, so the moment before it
runs is the interpreter's own start-up.

A standard stream closed before the command started (``>&-``, ``2>&-``) is ``None`` in
Python: a write to it crashed the command, and ``print`` to a ``None`` stderr wrote to stdout.
:func:`stand_in_for_closed_streams` puts a :class:`ClosedStream` in its place first of all.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from conclave.ui.exit_codes import ExitCode
from conclave.ui.signals import signal_exit_code

__all__ = [
    "ClosedStream",
    "Stopped",
    "discard_stdout",
    "main",
    "raise_stopped",
    "report",
    "stand_in_for_closed_streams",
    "stdout_is_closed",
    "wants_json",
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


class Stopped(BaseException):
    """SIGTERM or SIGHUP outside a run: ends the command like KeyboardInterrupt does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for ``--output-format json``: known before parsing, so
    that a line argparse refuses still gets its error as JSON."""
    wanted = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--output-format" and i + 1 < len(argv):
            wanted = argv[i + 1]
        elif arg.startswith("--output-format="):
            wanted = arg.partition("=")[2]
    return wanted == "json"


def report(message: str | None, code: int, json_errors: bool) -> int:
    """The last word: one line on stderr (none for a quiet stop) and, for JSON, the error
    object on stdout. Writing either may fail too; the exit code is still returned."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if message is not None:
            print(message, file=sys.stderr)
        if json_errors:
            import json

            error = message or ("terminated" if code == ExitCode.TERMINATED else "cancelled")
            sys.stdout.write(json.dumps({"error": error, "exit_code": int(code)}, indent=2))
            sys.stdout.write("\n")
            sys.stdout.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """``conclave``: :func:`conclave.ui.cli.main`, imported and run with the stop signals
    already handled. The handlers stay installed: the process is ending, and a signal
    while it does must not end it with a traceback either."""
    stand_in_for_closed_streams()
    args = list(sys.argv[1:] if argv is None else argv)
    with contextlib.suppress(ValueError):  # only the main thread may set handlers
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, raise_stopped)
    try:
        from conclave.ui.cli import main as command

        return command(args)
    except KeyboardInterrupt:
        return report(None, ExitCode.CANCELLED, wants_json(args))
    except Stopped as exc:
        return report(None, signal_exit_code(exc.signum), wants_json(args))
