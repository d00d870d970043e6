"""What a headless run shows: live progress (stderr lines or stream-json on stdout) and the
result (the answer and a summary line, or one JSON object)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from actors.events import DomainEvent
from actors.run.events import RunEnded
from actors.run.result import RunResult
from runtime import Event, encode
from ui.timeline import describe

__all__ = ["Progress", "plural", "print_result"]


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


def print_result(result: RunResult, output_format: str) -> None:
    data = result.to_json()
    if output_format == "json":
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif output_format == "stream-json":
        print(json.dumps({"type": "result", **data}, ensure_ascii=False))
    else:
        if result.final_answer is not None:
            print(result.final_answer)
        summary = (
            f"{result.termination}: winner {result.winner or '-'}, "
            f"{plural(len(result.answers), 'answer')}, {plural(result.llm_calls, 'LLM call')}, "
            f"{plural(result.restarts, 'restart')}, {result.duration_s:.2f}s; "
            f"log {result.log_dir}/events.jsonl"
        )
        print(summary, file=sys.stderr)
        if result.final_answer is None:
            print("conclave: the run produced no answer", file=sys.stderr)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
