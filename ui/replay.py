"""``conclave replay EVENTS.jsonl``: a finished (or crashed) run's timeline, readable."""

from __future__ import annotations

import os
import sys

import actors.kinds  # noqa: F401  (every kind a log may hold decodes)
from actors.run.events import RunEnded
from runtime import EventLogCorrupt, LogOpened, read_event_log
from ui.exit_codes import ExitCode
from ui.timeline import describe

__all__ = ["replay_command"]


def replay_command(path: str, *, verbose: bool = False) -> int:
    if os.path.isdir(path):
        path = os.path.join(path, "events.jsonl")  # a run's directory is what people have
    try:
        reading = read_event_log(path)
    except FileNotFoundError:
        print(f"conclave: no event log at {path}; pass the events.jsonl of a run", file=sys.stderr)
        return ExitCode.USAGE
    except (EventLogCorrupt, UnicodeDecodeError) as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if reading.truncated_line is not None:
        print(
            f"conclave: line {reading.truncated_line} of {path} was cut off mid-write; skipped",
            file=sys.stderr,
        )
    ended = False
    origin = reading.events[0].at if reading.events else 0.0
    for event in reading.events:
        if isinstance(event, LogOpened):
            continue
        line = describe(event, verbose=verbose)
        if line is not None:
            print(f"[{event.at - origin:8.3f}s] {line}")
        ended = ended or isinstance(event, RunEnded)
    if not ended:
        print("(the log ends before the run did: it was interrupted)")
    return ExitCode.OK
