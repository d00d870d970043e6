"""The batch's progress on stderr: a bar redrawn in place on a terminal, a plain line every
:data:`PLAIN_EVERY_S` seconds otherwise (a log file gets a readable history, not a stream of
carriage returns). Both say runs done of those to run, failures, cost so far, rate and ETA."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from conclave.config.wording import usd

__all__ = ["PLAIN_EVERY_S", "BatchProgress", "format_duration"]

PLAIN_EVERY_S = 10.0
_REDRAW_EVERY_S = 0.1
_BAR = 24


def format_duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class BatchProgress:
    """Counts runs as they end; :meth:`record` redraws when it is time to."""

    def __init__(
        self,
        total: int,
        stream: TextIO,
        *,
        terminal: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.cost = 0.0
        self.priced = False
        self._stream = stream
        self._terminal = terminal
        self._clock = clock
        self._started = clock()
        self._shown_at = -float("inf") if terminal else self._started

    def record(self, *, completed: bool, cost: float | None) -> None:
        self.done += 1
        self.failed += 0 if completed else 1
        if cost is not None:
            self.cost += cost
            self.priced = True
        now = self._clock()
        every = _REDRAW_EVERY_S if self._terminal else PLAIN_EVERY_S
        if now - self._shown_at >= every or self.done == self.total:
            self._shown_at = now
            self._show(now)

    def line(self, now: float | None = None) -> str:
        elapsed = (self._clock() if now is None else now) - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = format_duration(left / rate) if rate > 0 else "?"
        cost = usd(self.cost if self.priced else None)  # as the tables show it
        return (
            f"{self.done:,}/{self.total:,} runs, {self.failed:,} not completed, {cost}, "
            f"{rate:.1f} runs/s, elapsed {format_duration(elapsed)}, ETA {eta}"
        )

    def _show(self, now: float) -> None:
        if self._terminal:
            filled = _BAR * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (_BAR - filled)
            self._stream.write(f"\r\x1b[2K[{bar}] {self.line(now)}")
        else:
            self._stream.write(f"conclave batch: {self.line(now)}\n")
        self._stream.flush()

    def say(self, text: str) -> None:
        """A message on its own line (below the bar, which is drawn again at the next run)."""
        if self._terminal and self._shown_at != -float("inf"):
            self._stream.write("\n")
            self._shown_at = -float("inf")
        self._stream.write(f"conclave batch: {text}\n")
        self._stream.flush()

    def finish(self) -> None:
        """End the bar's line, so what follows starts on its own."""
        if self._terminal and self._shown_at != -float("inf"):
            self._stream.write("\n")
            self._stream.flush()
