"""The exit codes of every ``conclave`` command, in one place (documented in docs/).

A closed set, so an enum; an ``IntEnum`` because the process exit status is the value.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    OK = 0
    """The run completed with an answer (or the command did what it was asked)."""
    FAILED = 1
    """The run produced no answer at all, or it ended in an internal failure."""
    USAGE = 2
    """A flag, a config file, a task or a path was wrong; the message says which and why."""
    TIMEOUT = 3
    """The run timed out; the best answer so far is printed (the JSON says if there is none)."""
    CANCELLED = 130
    """Ctrl+C (SIGINT) or SIGHUP; the best answer so far is printed."""
    TERMINATED = 143
    """SIGTERM; the best answer so far is printed."""
