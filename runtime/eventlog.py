"""Append-only JSONL event log, and taps that receive events as they happen.

One event per line, flushed per line: a crash loses at most the line being written. Reading
back skips (and reports) a truncated last line; damage anywhere else is an error, because it
means the file was edited, not interrupted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Protocol, TypeVar

import attrs

from runtime.codec import DecodeError, decode, dumps_bytes
from runtime.events import Event

__all__ = [
    "EventLogCorrupt",
    "EventLogReading",
    "EventTap",
    "JsonlEventLog",
    "MemoryTap",
    "read_event_log",
]


E = TypeVar("E", bound=Event)


class EventTap(Protocol):
    def record(self, event: Event) -> None: ...


class MemoryTap:
    """Keeps events in a list; for tests and live UIs."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, cls: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, cls)]


class JsonlEventLog:
    """Writes each event as one JSON line and flushes it before returning."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered: each line goes to the OS in one write, which is the per-line flush.
        self._file: IO[bytes] | None = self.path.open("ab", buffering=0)

    def record(self, event: Event) -> None:
        if self._file is None:
            return
        self._file.write(dumps_bytes(event) + b"\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@attrs.frozen(kw_only=True)
class EventLogReading:
    events: list[Event]
    truncated_line: int | None
    """1-based number of a damaged last line that was skipped, else ``None``."""


class EventLogCorrupt(ValueError):
    pass


def read_event_log(path: str | os.PathLike[str]) -> EventLogReading:
    events: list[Event] = []
    truncated: int | None = None
    for number, line, is_last in _lines(Path(path)):
        try:
            events.append(decode(json.loads(line), Event))
        except (json.JSONDecodeError, DecodeError) as exc:
            if is_last and not line.endswith("\n"):
                truncated = number
                continue
            raise EventLogCorrupt(f"{path}:{number}: not a valid event ({exc})") from exc
    return EventLogReading(events=events, truncated_line=truncated)


def _lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    with path.open(encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    for i, line in enumerate(lines):
        if line.strip():
            yield i + 1, line, i == len(lines) - 1
