"""RunFeed: one run's stream-json lines, written once and read by any number of watchers.

The feed is a synchronous subscriber of the run's :class:`~actors.events.EventHub`. For each
event it folds the event into a :class:`~actors.events.view.RunView` (the snapshot a late
joiner gets first) and hands it to :class:`ui.headless.progress.StreamJson`, the encoder of
``conclave run --output-format stream-json``, whose lines it appends to one list. So the
lines every watcher gets are exactly the stream-json schema, each encoded once however many
watch.

Publishing never waits and costs the run O(1) per line, whatever the number of watchers: a
watcher is a cursor into the list, and its own task (:meth:`Watcher.take`) copies the lines
it has not sent yet. A watcher that falls more than ``limit`` lines behind is dropped (its
``on_drop`` is called, and the hub's :class:`~actors.events.SubscriberDropped` is recorded in
the run's log); the run never waits for it. Lines every watcher has taken are let go of, so
a feed holds at most about ``limit`` lines per watcher's lag.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import trio

from actors.events import DomainEvent, DropCause, SubscriberDropped
from actors.events.view import RunView
from actors.run.result import RunResult
from runtime import Event, LogOpened, converter
from ui.headless.progress import StreamJson

__all__ = ["SCAN_EVERY", "RunFeed", "Watcher"]

SCAN_EVERY = 64
"""Lines published between two checks of the watchers' lag: a check walks every watcher,
so doing it every 64 lines keeps publishing O(1) amortised."""


class _Sink(io.StringIO):
    """Where :class:`StreamJson` writes: each line, as written, goes to the feed."""

    def __init__(self, publish: Callable[[str], None]) -> None:
        super().__init__()
        self._publish = publish

    def write(self, text: str) -> int:
        self._publish(text.rstrip("\n"))
        return len(text)

    def flush(self) -> None:
        return None


class Watcher:
    """One watcher's place in a feed. Its task calls :meth:`wait` and :meth:`take`."""

    def __init__(
        self, feed: RunFeed, cursor: int, limit: int, on_drop: Callable[[str], None], name: str
    ) -> None:
        self.feed = feed
        self.cursor = cursor
        """The number (since the feed began) of the next line to take."""
        self.limit = limit
        self.name = name
        self.taken = 0
        self.dropped: str | None = None
        self._on_drop = on_drop

    @property
    def lag(self) -> int:
        return self.feed.total - self.cursor

    @property
    def done(self) -> bool:
        """Every line is taken and the feed will publish no more."""
        return self.feed.finished and self.cursor == self.feed.total

    async def wait(self) -> None:
        """Until there is a line to take, or the feed is finished."""
        await self.feed._wait_past(self.cursor)

    def take(self, max_bytes: int) -> list[str]:
        """The lines not taken yet, oldest first, up to about ``max_bytes`` (at least one)."""
        feed = self.feed
        start = self.cursor - feed.base
        end = start
        size = 0
        lines = feed.lines
        while end < len(lines) and (end == start or size + len(lines[end]) <= max_bytes):
            size += len(lines[end]) + 1
            end += 1
        self.cursor += end - start
        self.taken += end - start
        return lines[start:end]

    def close(self) -> None:
        """Stop watching (idempotent)."""
        self.feed._watchers.discard(self)

    def _drop(self) -> None:
        self.dropped = (
            f"it fell {self.lag:,} lines behind the run (the limit is {self.limit:,}); "
            "read faster, or subscribe again for a new snapshot"
        )
        self.close()
        self._on_drop(self.dropped)


class RunFeed:
    """See the module docstring. Make it in the run's trio context, just before the run
    opens (the stream's clock starts then), and subscribe :meth:`record` to the run's hub
    for :attr:`kinds`."""

    kinds: tuple[type[Event], ...] = (DomainEvent, LogOpened)

    def __init__(self, stream: StreamJson, *, record: Callable[[Event], None] | None = None):
        self.view = RunView()
        self.lines: list[str] = []
        self.base = 0
        """The number of the first line still held."""
        self.total = 0
        self.finished = False
        self.run_started: dict[str, Any] | None = None
        """The stream's ``run_started`` line, decoded, for late joiners' snapshots."""
        self.override_window: dict[str, Any] | None = None
        self.result_line: str | None = None
        """The ``result`` line, once the run is over (late subscribers get it)."""
        self._last_line: str | None = None
        self._stream = stream
        stream.stream = _Sink(self._publish)
        self._record = record
        self._watchers: set[Watcher] = set()
        self._changed = trio.Event()
        self._waiting = False

    @property
    def next_seq(self) -> int:
        """The ``seq`` of the next event line: what a snapshot taken now is followed by."""
        return self._stream.seq

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def bind(self, record: Callable[[Event], None] | None) -> None:
        """Where to record :class:`SubscriberDropped`: the run's actor system while the run
        lives, ``None`` once it has ended (its log is closed)."""
        self._record = record

    # ------------------------------------------------------------------ writing

    def record(self, event: Event) -> None:
        """The hub's synchronous subscriber: fold ``event`` in and publish its line."""
        self.view.apply(event)
        self._stream.record(event)

    def note(self, line: str) -> None:
        """Publish a line that is not an event (``override_window``): it takes no ``seq``."""
        self._publish(line)

    def finish(self, result: RunResult) -> None:
        """The run is over: publish its ``result`` line, the last."""
        if self.finished:
            return
        self._stream.finish(result)
        self.result_line = self._last_line
        self.finished = True
        self.override_window = None
        self._wake()

    def _publish(self, line: str) -> None:
        if self.run_started is None and line.startswith('{"type": "run_started"'):
            self.run_started = json.loads(line)
        self._last_line = line
        if self._watchers:
            self.lines.append(line)
        else:
            self.base += 1  # nobody would read it; late joiners start from a snapshot
        self.total += 1
        if self._waiting:
            self._wake()
        if self.total % SCAN_EVERY == 0:
            self._scan()

    def _wake(self) -> None:
        self._waiting = False
        self._changed.set()
        self._changed = trio.Event()

    def _scan(self) -> None:
        """Drop the watchers that fell too far behind; let go of lines all have taken."""
        for watcher in [w for w in self._watchers if w.lag > w.limit]:
            self._record_drop(watcher)
            watcher._drop()
        oldest = min((w.cursor for w in self._watchers), default=self.total)
        if oldest > self.base:
            del self.lines[: oldest - self.base]
            self.base = oldest

    def _record_drop(self, watcher: Watcher) -> None:
        if self._record is None:
            return
        self._record(
            SubscriberDropped(
                at=trio.current_time(),
                subscriber=watcher.name,
                cause=DropCause.FELL_BEHIND,
                detail=f"{watcher.lag:,} lines unread; the limit is {watcher.limit:,}",
                delivered=watcher.taken,
            )
        )

    async def _wait_past(self, cursor: int) -> None:
        while cursor >= self.total and not self.finished:
            self._waiting = True
            await self._changed.wait()

    # ------------------------------------------------------------------ reading

    def watch(self, *, limit: int, on_drop: Callable[[str], None], name: str) -> Watcher:
        """A watcher from the next line on. Take :meth:`snapshot` in the same step (no
        checkpoint between): the snapshot and the lines that follow then fit exactly."""
        watcher = Watcher(self, self.total, limit, on_drop, name)
        if not self._watchers:
            self.base = self.total
            self.lines.clear()
        self._watchers.add(watcher)
        return watcher

    def snapshot(self) -> dict[str, Any]:
        """The view as of the lines published so far, as JSON-ready data; its times are
        seconds since the run started, like the stream's ``t``."""
        view: dict[str, Any] = converter.unstructure(self.view)
        t = self._stream.clock.t
        for record in (view, *view["agents"].values()):
            for key in _TIMES:
                if record.get(key) is not None:
                    record[key] = t(record[key])
        return view


_TIMES = ("started_at", "now", "stopped_at")
"""The view's times are on the run's trio clock; a snapshot gives them as the stream's
``t`` (seconds since the run started)."""
