"""The stop signals, for every front end: which end a command, and the exit code each gives.

The first SIGINT (Ctrl+C) or SIGHUP ends what is running with its best so far and exit code
130; SIGTERM the same with 143 (docs/exit-codes.md).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

from conclave.ui.exit_codes import ExitCode

__all__ = ["STOP_SIGNALS", "StopSignals", "signal_exit_code"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that end a run (or a batch, or a server) with its best answer so far."""


def signal_exit_code(signum: int) -> ExitCode:
    return ExitCode.TERMINATED if signum == signal.SIGTERM else ExitCode.CANCELLED


class StopSignals:
    """The stop signals received, in order: the first decides the exit code of a cancelled
    run. While it is installed, a signal is only recorded, so none can interrupt trio's
    start-up or the printing of the result half-way; the run listens for them itself.
    ``conclave serve`` uses it the same way around its server."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def record(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous = {signum: signal.signal(signum, self.record) for signum in STOP_SIGNALS}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
