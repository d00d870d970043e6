"""The exit codes of every ``conclave`` command, in one place (docs/exit-codes.md explains
each, with the JSON result's fields).

A closed set, so an enum; an ``IntEnum`` because the process exit status is the value.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    OK = 0
    """The run completed with an answer (or the command did what it was asked)."""
    FAILED = 1
    """The run produced no answer at all, stdout could not take the result, or something
    unexpected failed (one line on stderr names it)."""
    USAGE = 2
    """A flag, a config file, a task or a path was wrong; the message says which and why."""
    TIMEOUT = 3
    """The run timed out, with or without an answer; the best answer so far is printed (the
    JSON's ``final_answer`` is ``null`` if there is none)."""
    PAUSED = 4
    """Paused: an agent needs the user (``--on-question pause``). The question is in the JSON
    result (``pending_question``) and in ``question.json`` in the run's log directory;
    ``conclave resume RUN_DIR --answer VALUE`` goes on with the answer."""
    MAX_ITERATIONS = 5
    """A PAOR agent ran out of iterations (``paor.max_iterations``) before its goal was
    achieved: its progress report (what was done, what is left, the last observations) is
    the answer printed."""
    CANCELLED = 130
    """Ctrl+C (SIGINT) or SIGHUP; the best answer so far is printed, or nothing if the run
    had not started."""
    TERMINATED = 143
    """SIGTERM; as for ``CANCELLED``."""
