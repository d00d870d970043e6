"""``conclave replay EVENTS.jsonl``: a finished (or crashed) run's timeline, readable.

The log is streamed, so a log of any size replays in bounded memory, and the timeline is
printed as it is read. Whatever the file is, replay ends with its exit code and at most a
line on stderr per finding, never a traceback:

* not readable (missing, a directory, no permission, an I/O error), not an event log, empty,
  or damaged before its last line: one line on stderr, exit code 2. The events before the
  damage have been printed by then.
* a last line cut off mid-write (a crash), events of kinds this version does not know (a
  newer version wrote them): said on stderr, skipped, exit code 0.
* after each run's timeline, a table of its agents (status, LLM calls, tokens, answer,
  vote, model) from a :class:`~actors.events.view.RunView` fed the same events: the view
  the run's live progress had, as of the end of the run or of its log; then, when the run
  changed files under its writable context paths, the footer the run printed (each path
  new, modified, deleted or renamed, and where the diff is).
* several runs in one file (logs concatenated, or appended to by a version before logs were
  created exclusively): each is shown in turn, timed from its own start, each after the
  first below a ``── run N`` line, and stderr says how many runs the file holds; exit code 0.

Text from the log is neutralised (:func:`ui.timeline.neutralise`): a hostile answer or a
crafted file cannot send escape sequences to the terminal.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import conclave.actors.kinds  # noqa: F401  (every kind a log may hold decodes)
from conclave.actors.events.view import RunView
from conclave.actors.run.events import RunEnded
from conclave.actors.workspace.events import ContextPathsChanged
from conclave.actors.workspace.writes import Writes, footer
from conclave.runtime.eventlog import EventLogError, EventLogStream, EventLogSummary, open_event_log
from conclave.runtime.events import LogOpened
from conclave.ui.exit_codes import ExitCode
from conclave.ui.text import display_path
from conclave.ui.timeline import agent_table, describe, neutralise, usage_unknown

__all__ = ["replay_command"]

INTERRUPTED = "(the log ends before the run did: it was interrupted)"


def replay_command(path: str, *, verbose: bool = False) -> int:
    if os.path.isdir(path):
        path = os.path.join(path, "events.jsonl")  # a run's directory is what people have
    try:
        with open_event_log(path) as log:
            _print_timeline(log, verbose=verbose)
            summary = log.summary
    except EventLogError as exc:
        _say(str(exc))
        return ExitCode.USAGE
    if summary.empty:
        _say(f"{path} is empty: the run wrote no event (it was stopped as it started?)")
        return ExitCode.USAGE
    _report(path, summary)
    return ExitCode.OK


def _print_timeline(log: EventLogStream, *, verbose: bool) -> None:
    """Each run's timeline as its events are read, then its agents' table from a
    :class:`RunView` the same events fed."""
    origin: float | None = None
    view = RunView()
    runs = 0
    ended = False
    writes: ContextPathsChanged | None = None
    for event in log:
        if isinstance(event, LogOpened):
            runs += 1
            if runs > 1:
                _end_of_run(view, writes, ended=ended)
                started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.wall_time))
                print(f"── run {runs} in this file: pid {event.pid}, started {started} ──")
            origin, ended, view, writes = event.at, False, RunView(), None
            continue
        if isinstance(event, ContextPathsChanged):
            writes = event
        if origin is None:
            origin = event.at
        view.apply(event)
        line = describe(event, verbose=verbose) or usage_unknown(event, view)
        if line is not None:
            print(f"[{event.at - origin:8.3f}s] {line}")
        ended = ended or isinstance(event, RunEnded)
    if log.summary.events:
        _end_of_run(view, writes, ended=ended)


def _end_of_run(view: RunView, writes: ContextPathsChanged | None, *, ended: bool) -> None:
    """Say if the run's log stops early, then show its agents as the view has them then,
    and the files it changed, as the run's own footer said."""
    if not ended:
        print(INTERRUPTED)
    table = agent_table(view)
    if table:
        print()
        for row in table:
            print(row)
    if writes is not None:
        text = footer(
            Writes(files=writes.files),
            Path(writes.list_file) if writes.list_file else None,
            Path(writes.diff_file) if writes.diff_file else None,
        )
        if text is not None:
            print()
            print(neutralise(display_path(text)))


def _report(path: str, summary: EventLogSummary) -> None:
    if summary.truncated_line is not None:
        _say(f"line {summary.truncated_line} of {path} was cut off mid-write; skipped")
    if summary.skipped_unknown:
        kinds = ", ".join(summary.unknown_kinds)
        _say(
            f"skipped {summary.skipped_unknown} events of unknown kinds ({kinds}); "
            "a newer conclave wrote them: upgrade to see them"
        )
    if summary.runs > 1:
        _say(
            f"this file holds {summary.runs} runs, shown one after another "
            "(each after the first below a '── run N' line)"
        )


def _say(message: str) -> None:
    print(f"conclave: {neutralise(message)}", file=sys.stderr)
