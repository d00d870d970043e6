"""A headless run's live progress: lines on stderr, or stream-json events on stdout."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from actors.events import DomainEvent
from actors.run.events import RunEnded
from runtime import Event, encode
from ui.timeline import describe

__all__ = ["Progress"]


class Progress:
    """Prints domain events as they happen: lines on stderr, or JSON lines on stdout.

    Falls silent once the run has ended (shutdown chatter is in the log, not the terminal)
    and when the reader of stdout goes away (``| head``).
    """

    def __init__(self, output_format: str, verbose: bool, stream: TextIO) -> None:
        self._origin: float | None = None
        self._ended = False
        self.format = output_format
        self.verbose = verbose
        self.stream = stream

    def record(self, event: Event) -> None:
        if self._ended:
            return
        self._ended = isinstance(event, RunEnded)
        try:
            self._show(event)
        except BrokenPipeError:
            self._ended = True

    def _show(self, event: Event) -> None:
        if self.format == "stream-json":
            if isinstance(event, DomainEvent) or self.verbose:
                data = encode(event)
                record = {"type": data.pop("kind"), **data}
                self.stream.write(json.dumps(record, ensure_ascii=False) + "\n")
                self.stream.flush()
            return
        if self._origin is None:
            self._origin = event.at
        line = describe(event, verbose=self.verbose)
        if line is not None:
            print(f"[{event.at - self._origin:6.2f}s] {line}", file=sys.stderr, flush=True)
