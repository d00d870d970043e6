"""A run's lineage: the logs of a run paused on a question and of the runs that resumed it.

``conclave resume`` never writes into the paused run's directory: the paused log stays as
the pause left it (append-only, and only read, so a resume killed at any point loses
nothing), and the resumed run logs into ``RUN_DIR/resumed-N``, its first event after the log
opens a :class:`~actors.run.events.RunResumed` naming the paused run's directory. The whole
run is the chain of those logs, oldest first: replay shows it as one timeline, and a second
resume replays the coordination of every log in it (a presentation that pauses twice
presents the answers given before the first pause). Copying the paused events into the
resumed log would have kept one file per run, but two copies of the same events, and a
resume killed mid-copy would leave a log that is neither.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from conclave.actors.run.events import RunResumed
from conclave.runtime.eventlog import EventLogError, open_event_log

__all__ = ["EVENTS", "LineageError", "lineage", "resumed_from", "run_id"]

EVENTS = "events.jsonl"

_RESUMED = re.compile(r"resumed-[0-9]+")
"""The name of a resumed run's log directory inside its paused run's (``RUN_DIR/resumed-N``)."""

_HEAD = 8
"""Events read at most to find ``run_resumed``: it is recorded right after ``log_opened``."""


class LineageError(Exception):
    """A log names a paused run whose log cannot be read; the message says which."""


def resumed_from(log_dir: Path) -> Path | None:
    """The log directory of the paused run that the run in ``log_dir`` resumed, or ``None``
    (it resumed none, or its log cannot be read: the reader of the log itself says why)."""
    try:
        with open_event_log(log_dir / EVENTS) as log:
            for i, event in enumerate(log):
                if isinstance(event, RunResumed):
                    return Path(os.path.normpath(log_dir / event.resumed_from))
                if i >= _HEAD:
                    return None
    except EventLogError:
        return None
    return None


def run_id(log_dir: Path) -> str:
    """The run's id: its log directory's name, behind its paused runs' ids for a resumed
    run (``20261123-160024-f2ea2e/resumed-1``): ``resumed-1`` alone names the first resume
    of every paused run, and a session or a stream would not tell them apart."""
    parts = [log_dir.name]
    parent = log_dir.parent
    while _RESUMED.fullmatch(parts[0]) and parent.name:
        parts.insert(0, parent.name)
        parent = parent.parent
    return "/".join(parts)


def lineage(log_dir: Path) -> tuple[Path, ...]:
    """The log directories of the run in ``log_dir`` and of the runs it resumed, oldest
    first, ``log_dir`` last. Raises :class:`LineageError` if a paused run's log is gone or
    the chain loops (directories moved or linked by hand)."""
    chain = [log_dir]
    seen = {os.path.realpath(log_dir)}
    parent = resumed_from(log_dir)
    while parent is not None:
        if not (parent / EVENTS).is_file():
            raise LineageError(
                f"{chain[-1]} resumed the paused run in {parent}, whose {EVENTS} is not "
                "there (moved or deleted?): what happened before the pause is lost"
            )
        if os.path.realpath(parent) in seen:
            raise LineageError(f"{parent} resumes itself (its directories were linked by hand)")
        seen.add(os.path.realpath(parent))
        chain.append(parent)
        parent = resumed_from(parent)
    return tuple(reversed(chain))
