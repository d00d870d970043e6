"""The ``conclave`` command's entry point: the stop signals are handled before the command's
modules load.

Importing the command (argparse, the config schema, the front ends) takes tens of
milliseconds. A Ctrl+C in that time used to raise ``KeyboardInterrupt`` outside any handler
and print a traceback (exit code 1). Here the import runs inside the handler, and SIGTERM
and SIGHUP raise :class:`Stopped` from the first line on, so a signal at any moment of
start-up ends the command quietly with its documented code (130, or 143 for SIGTERM). This
module imports nothing but the standard library's smallest parts, so the moment before it
runs is the interpreter's own start-up.

A standard stream closed before the command started (``>&-``, ``2>&-``) gets its stand-in
first of all (:mod:`ui.streams`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from conclave.ui.exit_codes import ExitCode
from conclave.ui.signals import signal_exit_code
from conclave.ui.streams import stand_in_for_closed_streams

__all__ = ["Stopped", "main", "raise_stopped", "report", "wants_json"]


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
    with contextlib.suppress(OSError, ValueError):
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
