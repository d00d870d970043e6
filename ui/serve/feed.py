"""RunFeed: one run's stream-json lines, written once and sent as the same frames to every
watcher.

The feed is a synchronous subscriber of the run's :class:`~actors.events.EventHub`. For each
event it folds the event into a :class:`~actors.events.view.RunView` (the snapshot a late
joiner gets first) and hands it to :class:`ui.progress.StreamJson`, the encoder of
``conclave run --output-format stream-json``. So the lines every watcher gets are exactly the
stream-json schema.

Fan-out costs per frame, not per line and client. The feed gathers the lines published since
its last frame and *seals* them into one :class:`Frame`: joined once, encoded to UTF-8 once,
and given its websocket header once (:mod:`ui.serve.raw_frames`), so the same ``bytes`` go
to every watcher as they are; once more, compressed, if a watcher asked for zlib frames
(:mod:`ui.serve.encoding`: 13 times fewer bytes for every such watcher, compressed once
for all of them). Its :meth:`RunFeed.flush_until_finished` task seals at once after a
quiet spell and at most once per interval during a burst; the interval grows with the
number of watchers (:meth:`RunFeed.interval`), so a run's fan-out sends at most about
``fanout_rate`` frames a second in all, however many watch: their cost to the run stays
bounded, and only their latency grows. A frame also seals when it reaches ``frame_bytes``.

As a frame is sealed, it is written at once (:meth:`Watcher.offer`) for every watcher that
is caught up and waiting, in one non-blocking write to its client's socket: 100 clients of a
run cost 100 writes per frame, and no task wakes. A watcher's own task (:meth:`Watcher.wait`,
:meth:`Watcher.take`) sends only what that could not: a frame its socket took in part or not
at all, or the frames it is behind by. What is left is mostly the kernel's work of copying
the run's few megabytes to each socket (``docs/serve.md`` has the benchmark's figures).

A watcher subscribing to a running run *joins* (:meth:`RunFeed.join`): it is let in at the
next frame boundary, with the :class:`Capture` (the snapshot) taken there, one for every
watcher joining in that interval: a 1,000-agent snapshot is hundreds of kilobytes of JSON,
and clients often subscribe together.

Publishing never waits and costs the run O(1) per line, whatever the number of watchers: a
watcher is a cursor into the sealed frames. A watcher that falls more than ``limit`` lines
behind is dropped (its ``on_drop`` is called, and the hub's
:class:`~actors.events.SubscriberDropped` is recorded in the run's log); the run never waits
for it. Frames every watcher has taken are let go of, so a feed holds at most about
``limit`` lines per watcher's lag.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import attrs
import trio

from conclave.actors.events import DomainEvent, DropCause, SubscriberDropped
from conclave.actors.events.view import RunView
from conclave.actors.run.result import RunResult
from conclave.runtime import Event, LogOpened, converter
from conclave.ui.progress import StreamJson
from conclave.ui.serve.encoding import FrameEncoding, encoded_frame

__all__ = ["SCAN_EVERY", "Capture", "Frame", "RunFeed", "Watcher"]

SCAN_EVERY = 64
"""Lines published between two checks of the watchers' lag: a check walks every watcher,
so doing it every 64 lines keeps publishing O(1) amortised."""


@attrs.frozen(kw_only=True)
class Frame:
    """Lines sealed together, shared by every watcher that sends them."""

    first: int
    """The number (since the feed began) of its first line."""
    lines: int
    wires: dict[FrameEncoding, bytes]
    """The websocket frame, in each encoding a watcher took it in when it was sealed: the
    lines joined by ``\\n``, UTF-8, as :func:`~ui.serve.encoding.encoded_frame` sends
    them."""

    def wire(self, encoding: FrameEncoding) -> bytes:
        return self.wires[encoding]


@attrs.frozen(kw_only=True, eq=False)
class Capture:
    """What a ``snapshot`` says, captured at a frame boundary: the lines from
    :attr:`next_seq` on follow it without a gap. One capture serves every client that
    joins at that boundary (a 1,000-agent view is hundreds of kilobytes of JSON)."""

    next_seq: int
    view: dict[str, Any]
    """The run as a :class:`~actors.events.view.RunView`, JSON-ready (see
    :meth:`RunFeed.snapshot`)."""
    run_started: dict[str, Any] | None
    override_window: dict[str, Any] | None
    ended: bool
    question: dict[str, Any] | None = None
    """The open question, as its ``question_asked`` line says it (but the common fields
    and ``call_id``); ``None`` when none waits."""
    approval: dict[str, Any] | None = None
    """The tool call waiting for approval, as its ``approval_requested`` line says it (but
    ``type`` and ``run_id``); ``None`` when none waits."""


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
    """One watcher's place in a feed. Its task calls :meth:`wait` and :meth:`take`.

    A watcher given a :attr:`write` (:meth:`RunFeed.watch`) that is waiting, caught up,
    gets each new frame written for it when the frame is sealed, without its task waking:
    its task wakes only when a frame could not be written whole (the client's socket is
    full, or another send is in progress), when the feed finishes, or when it is dropped."""

    def __init__(
        self,
        feed: RunFeed,
        cursor: int,
        frame: int,
        limit: int,
        on_drop: Callable[[str], None],
        name: str,
        write: Callable[[bytes], int | None] | None,
        encoding: FrameEncoding,
    ) -> None:
        self.feed = feed
        self.encoding = encoding
        """The frames it sends: text, or zlib (the client asked for it)."""
        self.cursor = cursor
        """The number (since the feed began) of the next line to take."""
        self.frame = frame
        """The number (since the feed began) of the next frame to take."""
        self.sent = 0
        """Bytes of frame :attr:`frame` already written (by :meth:`offer`)."""
        self.limit = limit
        self.name = name
        self.write = write
        """Write bytes to the client now if it can be done without waiting: how many were
        written (0 if the socket is full), or ``None`` if nothing may be written now."""
        self.taken = 0
        self.dropped: str | None = None
        self.snapshot: Capture | None = None
        """For a watcher that joined (:meth:`RunFeed.join`): where it starts."""
        self.admitted = trio.Event()
        """Set once the watcher is in the feed (at once, unless it joined)."""
        self.parked = False
        """Its task is in :meth:`wait`, caught up."""
        self._ready = trio.Event()
        self._on_drop = on_drop

    @property
    def lag(self) -> int:
        return self.feed.total - self.cursor

    @property
    def done(self) -> bool:
        """Every line is taken and the feed will publish no more."""
        return self.feed.finished and self.frame == self.feed.sealed

    async def wait(self) -> None:
        """Until there is a frame to take, or the feed is finished; a checkpoint even if
        there is one already (a watcher catching up never starves the run)."""
        feed = self.feed
        if self.frame < feed.sealed or feed.finished:
            await trio.lowlevel.checkpoint()
            return
        self.parked = True
        try:
            await self._ready.wait()
        finally:
            self.parked = False
            self._ready = trio.Event()

    def take(self, max_bytes: int) -> bytes:
        """The frames not taken yet (less what :meth:`offer` wrote of the first), oldest
        first, up to about ``max_bytes`` (at least one if there is one), as the bytes to
        send."""
        feed = self.feed
        frames, encoding = feed.frames, self.encoding
        start = self.frame - feed.frame_base
        end = start
        size = 0
        while end < len(frames) and (
            end == start or size + len(frames[end].wire(encoding)) <= max_bytes
        ):
            size += len(frames[end].wire(encoding))
            self.cursor += frames[end].lines
            self.taken += frames[end].lines
            end += 1
        self.frame += end - start
        sent, self.sent = self.sent, 0
        if end == start + 1 and not sent:
            return frames[start].wire(encoding)
        return b"".join(frame.wire(encoding) for frame in frames[start:end])[sent:]

    def offer(self, frame: Frame) -> None:
        """``frame`` was just sealed: write it now if this watcher is parked, caught up, and
        its client takes it; otherwise wake the task to send it."""
        if not self.parked:
            return
        if self.write is not None and self.frame == self.feed.sealed - 1 and not self.sent:
            wire = frame.wire(self.encoding)
            written = self.write(wire)
            if written == len(wire):
                self.frame += 1
                self.cursor += frame.lines
                self.taken += frame.lines
                return
            self.sent = written or 0
        self._ready.set()

    def wake(self) -> None:
        """Let the task out of :meth:`wait` (the feed finished)."""
        self._ready.set()

    def close(self) -> None:
        """Stop watching (idempotent)."""
        self.feed._watchers.discard(self)
        if self in self.feed._joiners:
            self.feed._joiners.remove(self)

    def _drop(self) -> None:
        self.dropped = (
            f"it fell {self.lag:,} lines behind the run (the limit is {self.limit:,}); "
            "read faster, or subscribe again for a new snapshot"
        )
        self.close()
        self._on_drop(self.dropped)


class RunFeed:
    """See the module docstring. Make it in the run's trio context, just before the run
    opens (the stream's clock starts then), subscribe :meth:`record` to the run's hub for
    :attr:`kinds`, and run :meth:`flush_until_finished` beside the run."""

    kinds: tuple[type[Event], ...] = (DomainEvent, LogOpened)

    def __init__(
        self,
        stream: StreamJson,
        *,
        record: Callable[[Event], None] | None = None,
        flush_interval: float = 0.02,
        fanout_rate: float = 1000.0,
        frame_bytes: int = 256 * 1024,
    ) -> None:
        self.view = RunView()
        self.pending: list[str] = []
        """Lines published since the last frame, for the next one (kept only while
        someone watches)."""
        self.frames: list[Frame] = []
        self.frame_base = 0
        """The number of the first frame still held."""
        self.sealed = 0
        """The number of frames sealed since the feed began."""
        self.total = 0
        """The number of lines published since the feed began."""
        self.applied = 0
        """The number of events folded into :attr:`view` (a snapshot's version)."""
        self.finished = False
        self.run_started: dict[str, Any] | None = None
        """The stream's ``run_started`` line, decoded, for late joiners' snapshots."""
        self.override_window: dict[str, Any] | None = None
        self.question: dict[str, Any] | None = None
        """The question waiting for an answer, for late joiners' snapshots."""
        self.approval: dict[str, Any] | None = None
        """The tool call waiting for approval, for late joiners' snapshots."""
        self.result_line: str | None = None
        """The ``result`` line, once the run is over (late subscribers get it)."""
        self.flush_interval = flush_interval
        self.fanout_rate = fanout_rate
        self.frame_bytes = frame_bytes
        self._pending_bytes = 0
        self._sealed_at = float("-inf")
        self._last_line: str | None = None
        self._stream = stream
        stream.stream = _Sink(self._publish)
        self._record = record
        self._watchers: set[Watcher] = set()
        self._work = trio.Event()
        """Set when there are lines to seal or watchers to admit: the flusher's cue."""
        self._joiners: list[Watcher] = []
        self._capture: tuple[tuple[int, int, bool, bool, bool, bool], Capture] | None = None

    @property
    def next_seq(self) -> int:
        """The ``seq`` of the next event line: what a snapshot taken now is followed by."""
        return self._stream.seq

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    @property
    def interval(self) -> float:
        """Seconds between two frames during a burst: ``flush_interval``, or longer when so
        many watch that frames that often would make more than ``fanout_rate`` sends a
        second (100 watchers at 1,000 a second: a frame every 100 ms)."""
        return max(self.flush_interval, len(self._watchers) / self.fanout_rate)

    def bind(self, record: Callable[[Event], None] | None) -> None:
        """Where to record :class:`SubscriberDropped`: the run's actor system while the run
        lives, ``None`` once it has ended (its log is closed)."""
        self._record = record

    # ------------------------------------------------------------------ writing

    def record(self, event: Event) -> None:
        """The hub's synchronous subscriber: fold ``event`` in and publish its line."""
        self.view.apply(event)
        self.applied += 1
        self._stream.record(event)

    def note(self, line: str) -> None:
        """Publish a line that is not an event (``override_window``): it takes no ``seq``."""
        self._publish(line)

    def finish(self, result: RunResult) -> None:
        """The run is over: publish its ``result`` line, the last, and seal what is left.
        The watchers still joining are let in first: the ``result`` line is their first."""
        if self.finished:
            return
        self._seal()
        self._admit()
        self._stream.finish(result)
        self.result_line = self._last_line
        self._seal()
        self.finished = True
        self.override_window = None
        self.question = None
        self.approval = None
        self._work.set()
        for watcher in list(self._watchers):
            watcher.wake()

    async def flush_until_finished(self) -> None:
        """Seal the lines published into frames, and let in the watchers joining, at once
        after a quiet spell and at most once per :attr:`interval` during a burst, until the
        feed is finished. Cancelled, it just stops: :meth:`finish` does the rest."""
        while not self.finished:
            await self._work.wait()
            await trio.sleep_until(self._sealed_at + self.interval)
            self._work = trio.Event()
            self._seal()
            self._admit()

    def _publish(self, line: str) -> None:
        if self.run_started is None and line.startswith('{"type": "run_started"'):
            self.run_started = json.loads(line)
        self._last_line = line
        self.total += 1
        if self._watchers:
            self.pending.append(line)
            self._pending_bytes += len(line) + 1
            if self._pending_bytes >= self.frame_bytes:
                self._seal()
            elif len(self.pending) == 1:
                self._work.set()
        if self.total % SCAN_EVERY == 0:
            self._scan()

    def _seal(self) -> None:
        """The pending lines become one frame, in each encoding a watcher takes (the
        watchers let in later start after it), and the watchers waiting are woken."""
        if not self.pending:
            return
        self._sealed_at = trio.current_time()
        payload = "\n".join(self.pending).encode("utf-8")
        first = self.total - len(self.pending)
        wires = {
            encoding: encoded_frame(payload, encoding)
            for encoding in {watcher.encoding for watcher in self._watchers}
        }
        frame = Frame(first=first, lines=len(self.pending), wires=wires)
        self.frames.append(frame)
        self.sealed += 1
        self.pending = []
        self._pending_bytes = 0
        for watcher in list(self._watchers):
            watcher.offer(frame)

    def _scan(self) -> None:
        """Drop the watchers that fell too far behind; let go of frames all have taken."""
        for watcher in [w for w in self._watchers if w.lag > w.limit]:
            self._record_drop(watcher)
            watcher._drop()
        oldest = min((w.frame for w in self._watchers), default=self.sealed)
        if oldest > self.frame_base:
            del self.frames[: oldest - self.frame_base]
            self.frame_base = oldest

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

    # ------------------------------------------------------------------ reading

    def watch(
        self,
        *,
        limit: int,
        on_drop: Callable[[str], None],
        name: str,
        write: Callable[[bytes], int | None] | None = None,
        encoding: FrameEncoding = FrameEncoding.TEXT,
    ) -> Watcher:
        """A watcher from the next line on, at once. Take :meth:`capture` in the same step
        (no checkpoint between) if it needs one: the snapshot and the lines that follow then
        fit exactly. The lines pending are sealed first: they are for the watchers before.
        ``write`` writes to its client without waiting (see :attr:`Watcher.write`);
        ``encoding`` is how its frames are written (:mod:`ui.serve.encoding`)."""
        self._seal()
        watcher = Watcher(self, self.total, self.sealed, limit, on_drop, name, write, encoding)
        self._let_in(watcher)
        return watcher

    def join(
        self,
        *,
        limit: int,
        on_drop: Callable[[str], None],
        name: str,
        write: Callable[[bytes], int | None] | None = None,
        encoding: FrameEncoding = FrameEncoding.TEXT,
    ) -> Watcher:
        """A watcher that starts at the next frame boundary, with the :class:`Capture` taken
        there (:attr:`Watcher.snapshot`, once :attr:`Watcher.admitted` is set): every
        watcher joining in the same interval shares one capture, however busy the run."""
        watcher = Watcher(self, self.total, self.sealed, limit, on_drop, name, write, encoding)
        self._joiners.append(watcher)
        self._work.set()
        return watcher

    def capture(self) -> Capture:
        """The snapshot as of the lines published so far (the same object until another
        line is published or the override window closes)."""
        key = (
            self.applied,
            self.total,
            self.finished,
            self.override_window is not None,
            self.question is not None,
            self.approval is not None,
        )
        if self._capture is None or self._capture[0] != key:
            capture = Capture(
                next_seq=self.next_seq,
                view=self.snapshot(),
                run_started=self.run_started,
                override_window=self.override_window,
                ended=self.finished,
                question=self.question,
                approval=self.approval,
            )
            self._capture = (key, capture)
        return self._capture[1]

    def _admit(self) -> None:
        """Let the joiners in, at this boundary (nothing is pending), with one capture."""
        if not self._joiners:
            return
        capture = self.capture()
        for watcher in self._joiners:
            watcher.cursor, watcher.frame, watcher.snapshot = self.total, self.sealed, capture
            self._let_in(watcher)
        self._joiners = []

    def _let_in(self, watcher: Watcher) -> None:
        if not self._watchers:
            self.frame_base = self.sealed
            self.frames.clear()
        self._watchers.add(watcher)
        watcher.admitted.set()

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
