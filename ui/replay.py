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
* a resumed run (``conclave resume`` logs into ``RUN_DIR/resumed-N``, starting at the resume):
  the paused run's log is shown first (and the logs of the resumes before, if it paused
  again), then the resumed run's below a ``── resumed in`` line, timed from the paused run's
  start, with one table of the agents over the whole run; stderr says so. Its log names the
  paused run's (``run_resumed``), which is never written again: see
  :mod:`actors.run.lineage`.
* a stdout that cannot take the timeline (closed before the command started, or full): one
  line on stderr, exit code 1 (:mod:`ui.streams`). A reader that left (``| head``) ends the
  replay quietly.
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
from conclave.actors.run.lineage import EVENTS, LineageError, lineage
from conclave.actors.workspace.events import ContextPathsChanged
from conclave.actors.workspace.writes import Writes, footer
from conclave.runtime.eventlog import EventLogError, EventLogStream, EventLogSummary, open_event_log
from conclave.runtime.events import LogOpened
from conclave.ui.exit_codes import ExitCode
from conclave.ui.streams import StdoutFailed, cannot_write, write_out
from conclave.ui.text import display_path
from conclave.ui.timeline import agent_table, describe, neutralise, usage_unknown

__all__ = ["replay_command"]

INTERRUPTED = "(the log ends before the run did: it was interrupted)"


def replay_command(path: str, *, verbose: bool = False) -> int:
    if os.path.isdir(path):
        path = os.path.join(path, EVENTS)  # a run's directory is what people have
    try:
        code = _replay(path, _Timeline(verbose=verbose))
        write_out("")  # flushes the timeline: a full stdout says so here at the latest
    except StdoutFailed as exc:
        return cannot_write("conclave replay", "the timeline", exc.why)
    return code


def _replay(path: str, timeline: _Timeline) -> int:
    try:
        for number, log_path in enumerate(_whole_run(path)):
            with open_event_log(log_path) as log:
                timeline.show(log, resumed=number > 0)
                summary = log.summary
            if summary.empty:
                _say(f"{log_path} is empty: the run wrote no event (it was stopped as it started?)")
                return ExitCode.USAGE
            _report(log_path, summary)
    except EventLogError as exc:
        _say(str(exc))
        return ExitCode.USAGE
    timeline.end()
    return ExitCode.OK


def _whole_run(path: str) -> list[str]:
    """The logs to show for the run logged at ``path``: a resumed run's (``conclave resume``)
    are those of the paused runs it went on with, oldest first, then its own, since its own
    starts at the resume. Said on stderr when there are several, or when a paused run's log
    is gone (the resumed run alone is shown then)."""
    if os.path.basename(path) != EVENTS:
        return [path]
    try:
        chain = lineage(Path(os.path.dirname(path) or "."))
    except LineageError as exc:
        _say(f"{exc}; showing the run from the resume on")
        return [path]
    if len(chain) > 1:
        _say(
            f"a resumed run: shown from the start of the paused run in "
            f"{display_path(str(chain[0]))}, each resume below a '── resumed' line"
        )
    return [str(run / EVENTS) for run in chain]


class _Timeline:
    """The timeline being printed, across the logs of one file or of a paused run and its
    resumes, and the :class:`RunView` the same events feed."""

    def __init__(self, *, verbose: bool) -> None:
        self.verbose = verbose
        self.origin: float | None = None
        self.view = RunView()
        self.runs = 0
        self.ended = False
        self.writes: ContextPathsChanged | None = None
        self.started_wall: float | None = None
        """The wall time the first log opened: a resume's times count from it."""

    def show(self, log: EventLogStream, *, resumed: bool) -> None:
        """Each run's timeline as its events are read. A resumed run's log (``resumed``)
        goes on with the same timeline and view: its times count from the paused run's
        start (by the wall clock: each process has its own monotonic clock)."""
        opened = False
        for event in log:
            if isinstance(event, LogOpened):
                if resumed and not opened:
                    self._resumed(event, log.path)
                else:
                    self._next_run(event)
                opened = True
                continue
            if isinstance(event, ContextPathsChanged):
                self.writes = event
            if self.origin is None:
                self.origin = event.at
            self.view.apply(event)
            line = describe(event, verbose=self.verbose) or usage_unknown(event, self.view)
            if line is not None:
                _out(f"[{event.at - self.origin:8.3f}s] {line}")
            self.ended = self.ended or isinstance(event, RunEnded)

    def end(self) -> None:
        if self.runs or self.origin is not None:
            _end_of_run(self.view, self.writes, ended=self.ended)

    def _next_run(self, event: LogOpened) -> None:
        self.runs += 1
        if self.runs > 1:
            _end_of_run(self.view, self.writes, ended=self.ended)
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.wall_time))
            _out(f"── run {self.runs} in this file: pid {event.pid}, started {started} ──")
        self.origin, self.ended, self.view, self.writes = event.at, False, RunView(), None
        self.started_wall = event.wall_time

    def _resumed(self, event: LogOpened, path: str) -> None:
        if not self.ended:
            _out(INTERRUPTED)
        first = self.started_wall if self.started_wall is not None else event.wall_time
        self.origin = event.at - (event.wall_time - first)
        self.ended = False
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.wall_time))
        where = neutralise(display_path(path))
        _out(f"── resumed in {where}: pid {event.pid}, started {started} ──")


def _end_of_run(view: RunView, writes: ContextPathsChanged | None, *, ended: bool) -> None:
    """Say if the run's log stops early, then show its agents as the view has them then,
    and the files it changed, as the run's own footer said."""
    if not ended:
        _out(INTERRUPTED)
    table = agent_table(view)
    if table:
        _out()
        for row in table:
            _out(row)
    if writes is not None:
        text = footer(
            Writes(files=writes.files),
            Path(writes.list_file) if writes.list_file else None,
            Path(writes.diff_file) if writes.diff_file else None,
        )
        if text is not None:
            _out()
            _out(neutralise(display_path(text)))


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


def _out(text: str = "") -> None:
    """A line of the timeline on stdout (flushed at the end: :func:`replay_command`);
    :class:`StdoutFailed` if stdout cannot take it."""
    write_out(text + "\n", flush=False)


def _say(message: str) -> None:
    print(f"conclave: {neutralise(message)}", file=sys.stderr)
