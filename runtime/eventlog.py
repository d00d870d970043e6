"""Append-only JSONL event log, and taps that receive events as they happen.

Line format
    One event per line: compact UTF-8 JSON, an object whose first key is ``kind`` (the
    event's registered tag) followed by ``at`` and the event's other fields, then ``\\n``.
    Lines reach the OS whole and in order, as the log's :class:`Flushing` says. With
    ``EACH_EVENT`` (the default) each line goes in one write before
    :meth:`JsonlEventLog.record` returns, so a crash of the process loses at most the line
    being written. With ``WHEN_IDLE`` (what a run uses) events are queued and written in
    batches when trio goes idle, so a process killed outright loses at most the
    :data:`MAX_PENDING_EVENTS` events not yet written and the line being written; an actor
    that crashes loses nothing (its process writes the queue), and :meth:`~JsonlEventLog.close`
    writes everything. Either way the file holds whole lines, but for a last one cut off
    mid-write, which readers skip and report. No line is longer than
    :data:`MAX_LINE_BYTES`. A log holds one run and its first event is ``log_opened``. The
    file is created exclusively (``O_EXCL``), never appended to or overwritten: a path that
    exists, or a symbolic link there (dangling or not: it is never followed), is refused
    with :class:`EventLogExists`.

Envelope references
    An event about an envelope (``delivered``, ``held``, ``released``, ``redirected``,
    ``dead_letter``) carries the envelope in full the first time the log mentions it,
    ``"envelope": {"id": 17, "sender": ..., "payload": {...}}``, and only its id after that,
    ``{"kind":"delivered","at":2.5,"envelope_ref":17}``: a payload is written once, so the
    log grows with the number of events, not with events times payload size. A redirect
    keeps the id: after ``{"kind":"redirected",...,"envelope_ref":17,"to":B}``, id 17 names
    the envelope addressed to B (an envelope whose recipient changed any other way is
    written in full). A line that writes an envelope in full always (re)defines its id.
    A reference reaches back at most :data:`REFERENCE_REACH` envelope lines (lines that carry
    an envelope or a reference), or, for an envelope whose last line is ``held``, to that
    line however far back (for at most :data:`HELD_REACH` envelopes held at a time): mail
    held until answers go quiet is released long after. The writer forgets other envelopes
    it has not mentioned for that long and writes them in full if they come back, so writer
    and reader need bounded memory however long the run. Ids are unique within a process,
    so a log's envelopes must come from the process that writes it.

Fewer lines (format 3)
    Releases written together (in one batch: ``Flushing.WHEN_IDLE``), each followed by the
    delivery of the envelope it released, are one line listing the envelopes,
    ``{"kind":"released","at":2.5,"envelope_refs":[17,18]}``: it stands for the release and
    then the delivery of each, in order, at the line's time (that of the first release), and
    counts as two mentions of each for the reach. In a 1,000-agent ring run, 2.7 envelopes
    per agent were held, and their release-and-delivery pairs were 5.5 of its 31 lines per
    agent. The delivery of an envelope an actor sent itself is not written: it never left
    the actor (an agent's note that its round settled, 2 lines per agent), and no reader
    uses it; taps hear it, and its hold, release or dead letter is written. A format 2 log
    (every release and delivery a line) reads as it was written.

Deliveries
    With ``deliveries=False`` (a run's log, unless ``conclave run --log-deliveries``) the
    log writes no ``delivered`` line: only the deliveries a ``released`` line of format 3
    stands for. Every other routing fact (``held``, ``released``, ``redirected``,
    ``dead_letter``) is written as ever, and taps that ask hear every delivery (such a log
    declines them: :func:`hears_deliveries`). A run's domain events
    (answers, votes, rounds, calls) already say what its messages did, and no reader of the
    log (replay, the views, resume) reads a delivery; yet in a 1,000-agent ring run they were
    10 of 23 lines per agent and 5.5 of its 7.8 MB, the first mention of nearly every
    envelope, so writing them was most of what the log cost the run (issue 24).

Long texts
    A string of at least 1,024 characters (an answer, a task) is written in full once;
    later lines that hold it again hold ``null`` there and name it in their ``texts`` key,
    so a 1 MB answer passed around a run costs the log about 1 MB, not one copy per
    mention. The format and its reach are in :mod:`runtime.eventlog_texts`. The first
    line, ``log_opened``, says the log's ``format`` (:data:`~runtime.events.EVENT_LOG_FORMAT`);
    a reader refuses a format newer than it knows (:class:`EventLogTooNew`).

Truncation and failure
    ``record`` never raises. A write that fails (disk full, I/O error) or stops short after
    a retry for the rest never leaves half a line: the file is truncated back to its last
    full line, logging stops (later records are no-ops), and the failure is reported once,
    as an :class:`EventLogFailure` passed to ``on_failure`` and kept in ``failure``. An
    event the codec cannot encode, or one longer than a line may be, stops the log the same
    way, and so does an error when the file is closed. The runtime prints nothing; the UI
    says it. The run goes on without its log.

Reading
    :func:`open_event_log` streams a log: memory does not grow with the file. A line longer
    than :data:`MAX_LINE_BYTES` is corruption and is never read whole. Lines of event kinds
    nobody registered (a newer version wrote them) are skipped and counted. A last line cut
    off mid-write (a crash) is skipped and reported; damage anywhere else is an error,
    because it means the file was edited, not interrupted. A file whose first line is not
    an event is not an event log at all; an empty one is reported as empty, and one that
    holds several runs (several ``log_opened``, from concatenated files or a version that
    appended) as such: see :class:`EventLogSummary`.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import errno
import json
import math
import os
import time
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import attrs
import orjson
import trio

from conclave.runtime.codec import (
    DecodeError,
    decode,
    encode,
    encode_envelope,
    encode_float,
    encode_without,
    json_line,
)
from conclave.runtime.eventlog_texts import TEXTS_KEY, TextError, TextReader, TextWriter
from conclave.runtime.events import (
    EVENT_LOG_FORMAT,
    Delivered,
    Event,
    Held,
    LogOpened,
    Redirected,
    Released,
)
from conclave.runtime.messages import Address, Envelope, find_message_class

__all__ = [
    "HELD_REACH",
    "MAX_LINE_BYTES",
    "MAX_PENDING_EVENTS",
    "REFERENCE_REACH",
    "EventLogCorrupt",
    "EventLogError",
    "EventLogExists",
    "EventLogFailure",
    "EventLogReading",
    "EventLogStream",
    "EventLogSummary",
    "EventLogTooNew",
    "EventLogUnreadable",
    "EventTap",
    "Flushing",
    "JsonlEventLog",
    "LogFile",
    "MemoryTap",
    "NotAnEventLog",
    "hears_deliveries",
    "open_event_log",
    "read_event_log",
]

E = TypeVar("E", bound=Event)

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line (with its newline) a log may hold; the writer refuses a longer event
rather than write what its reader would refuse."""

REFERENCE_REACH = 65_536
"""How many envelope lines back an ``envelope_ref`` may point, at most."""

HELD_REACH = 262_144
"""How many held envelopes the writer remembers until their next line, at most."""

_GENERATION = REFERENCE_REACH // 2
"""The writer remembers envelopes in two generations of this many envelope lines each: one
mentioned within the last generation is always remembered, none older than two is."""


class EventTap(Protocol):
    """Hears a system's events (see :func:`hears_deliveries` for the one kind it may decline)."""

    def record(self, event: Event) -> None: ...


def hears_deliveries(tap: EventTap) -> bool:
    """Whether ``tap`` is handed every :class:`Delivered` event. A tap declines with an
    attribute ``hears_deliveries = False``; a delivery that ends a hold (after its
    :class:`Released`) reaches every tap all the same.

    Deliveries are a third of the events a run records (8 of 26 per agent in a ring), and
    none of a run's own taps reads them: built only for the taps that ask, a 1,000-agent run
    makes ~8,000 events and ~30,000 tap calls fewer. A tap without the attribute hears them,
    as every tap did before it existed."""
    return getattr(tap, "hears_deliveries", True) is not False


class MemoryTap:
    """Keeps events in a list; for tests and live UIs."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, cls: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, cls)]


# ---------------------------------------------------------------------------- writing


class LogFile(Protocol):
    """What the writer needs of its file: an unbuffered binary file (``io.FileIO``) does."""

    def write(self, data: bytes, /) -> int | None: ...

    def truncate(self, size: int, /) -> int: ...

    def close(self) -> None: ...


class Flushing(enum.Enum):
    """When a log's lines go to the OS (see the module docstring)."""

    EACH_EVENT = "each_event"
    """Each event is encoded and written, in one write, before ``record`` returns."""
    WHEN_IDLE = "when_idle"
    """``record`` only queues the event; the queue is encoded and written, in one write,
    when trio is about to wait with no task ready (for as long as it would wait), once
    :data:`MAX_PENDING_EVENTS` are queued, and on :meth:`JsonlEventLog.close`. The run's
    busy moments do no logging: in a run of thousands of agents, encoding and writing each
    event as it happened cost a third of the CPU, spent where the agents were waiting for it."""


MAX_PENDING_EVENTS = 4_096
"""With ``Flushing.WHEN_IDLE``, at most this many events wait to be written: a run that is
never idle writes them in batches of this many, and a process killed outright loses at most
this many (plus the line being written)."""

_CHUNK = 64
"""Events encoded between two looks at the clock while flushing in idle time."""


class EventLogExists(FileExistsError):
    """The log's path is taken: by an earlier log, or by a symbolic link, which is never
    followed (it could point anywhere, such as a file of someone else's)."""

    def __init__(self, path: Path) -> None:
        try:
            link: str | None = os.readlink(path)
        except OSError:
            link = None
        if link is not None:
            message = (
                f"event log {path} is a symbolic link (to {link}); a log never follows "
                "links: remove the link or choose another log directory"
            )
        else:
            message = (
                f"event log {path} already exists; a log is created new, never appended to "
                "or overwritten: choose another log directory or move the old log away"
            )
        super().__init__(errno.EEXIST, message, str(path))
        self.message = message

    def __str__(self) -> str:
        return self.message


@attrs.frozen(kw_only=True)
class EventLogFailure:
    """Why a log stopped, and what it still holds."""

    path: str
    line: int
    """The 1-based number of the line that could not be written."""
    error: str
    kept_bytes: int
    """The size of the file when logging stopped: every one of its lines is whole."""
    truncated: bool
    """``False`` if even cutting the file back failed: its last line may be cut off,
    which readers skip and report."""

    def __str__(self) -> str:
        kept = (
            f"it keeps lines 1-{self.line - 1} ({self.kept_bytes} bytes)"
            if self.truncated
            else "cutting it back to its last full line failed too, so its last line may be cut off"
        )
        return (
            f"event log {self.path} stopped at line {self.line}: {self.error}; {kept}. "
            "The run goes on unlogged; free disk space or choose another log directory."
        )


class JsonlEventLog:
    """Writes each event as one JSON line: at once, or in a batch when trio is idle
    (``flushing``; see the module docstring).

    ``record`` never raises: a failure stops the log and is reported once through
    ``on_failure`` (and kept in :attr:`failure`); see the module docstring. A callback that
    raises is ignored, so an error in the UI cannot reach the actor that recorded the event.
    With ``Flushing.WHEN_IDLE`` the log must be made inside ``trio.run`` (the run's one
    instrument for every such log writes its queue: :class:`_FlushWhenIdle`), and a failure
    is reported when the batch is written, not by the ``record`` of the event.
    ``deliveries=False`` writes no plain deliveries (module docstring, "Deliveries").
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        on_failure: Callable[[EventLogFailure], None] | None = None,
        flushing: Flushing = Flushing.EACH_EVENT,
        deliveries: bool = True,
    ) -> None:
        """Create the file at ``path`` (and its directory): exclusively, never following a
        symbolic link. Raises :class:`EventLogExists` if the path is taken, and
        ``RuntimeError`` for ``Flushing.WHEN_IDLE`` outside ``trio.run``."""
        _check_flushing(flushing)
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL with O_CREAT fails on any existing path, a symbolic link included, dangling
        # or not (POSIX: the link is not followed), so no O_NOFOLLOW is needed on top.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(target, flags, 0o666)
        except FileExistsError:
            raise EventLogExists(target) from None
        file = open(fd, "wb", buffering=0)  # noqa: SIM115  (closed by close() or a failure)
        self._setup(target, file, on_failure, flushing, deliveries)

    @classmethod
    def writing_to(
        cls,
        file: LogFile,
        path: str | os.PathLike[str],
        *,
        on_failure: Callable[[EventLogFailure], None] | None = None,
        flushing: Flushing = Flushing.EACH_EVENT,
        deliveries: bool = True,
    ) -> JsonlEventLog:
        """A log over a file already open (at its start), named ``path`` in reports: for
        callers that open the file themselves, and tests that simulate a failing disk."""
        _check_flushing(flushing)
        log = cls.__new__(cls)
        log._setup(Path(path), file, on_failure, flushing, deliveries)
        return log

    def _setup(
        self,
        path: Path,
        file: LogFile,
        on_failure: Callable[[EventLogFailure], None] | None,
        flushing: Flushing,
        deliveries: bool,
    ) -> None:
        self.path = path
        self.hears_deliveries = deliveries
        """Whether it writes plain deliveries. One that does not is not even handed them (a
        third of a run's events): it needs only those after a release, which every tap hears
        (:func:`hears_deliveries`); one that comes later (its mailbox was full) is skipped."""
        self.on_failure = on_failure
        self.failure: EventLogFailure | None = None
        self._file: LogFile | None = file
        self._size = 0
        self._lines = 0
        # Envelope id -> the recipient the reader will restore for it, in two generations.
        self._recent: dict[int, Address] = {}
        self._older: dict[int, Address] = {}
        self._mentions = 0
        self._held: dict[int, Address] = {}
        """Envelopes whose last line is ``held``, remembered until their next line."""
        self._texts = TextWriter()
        self._queue: collections.deque[Event] | None = None
        """Events recorded and not yet written (``WHEN_IDLE``); ``None``: none are kept."""
        self._flusher: _FlushWhenIdle | None = None
        if flushing is Flushing.WHEN_IDLE:
            self._queue = collections.deque()
            self._flusher = _FlushWhenIdle.of_this_run()

    def record(self, event: Event) -> None:
        cls = type(event)
        if self._file is None or cls.ephemeral:
            return
        queue = self._queue
        if queue is None:
            self._write([event])
            return
        if not queue and self._flusher is not None:
            self._flusher.queued[id(self)] = self
        queue.append(event)
        if len(queue) >= MAX_PENDING_EVENTS:
            self.flush()

    def flush(self, *, within: float = math.inf) -> None:
        """Encode and write the queued events (``Flushing.WHEN_IDLE``) in one write; like
        ``record`` it never raises. ``within``: stop taking events from the queue once this
        many seconds have passed (one chunk is always taken), so that a flush in trio's idle
        time ends about when trio would have woken."""
        queue = self._queue
        if not queue or self._file is None:
            return
        if within == math.inf or len(queue) <= _CHUNK:
            events = list(queue)
            queue.clear()
        else:
            deadline = time.perf_counter() + within
            events = []
            while queue:
                events.extend(queue.popleft() for _ in range(min(_CHUNK, len(queue))))
                if time.perf_counter() >= deadline:
                    break
        if not queue and self._flusher is not None:
            self._flusher.queued.pop(id(self), None)
        self._write(events)

    def _write(self, events: list[Event]) -> None:
        """Encode ``events`` and write their lines in one write. The first that cannot be
        encoded, or a write that fails, stops the log after the lines before it."""
        file = self._file
        assert file is not None
        lines: list[bytes] = []
        error: str | None = None
        at, count = 0, len(events)
        while at < count:
            event = events[at]
            cls = type(event)
            try:
                if cls is Released:
                    line, at = self._releases(events, at)
                    if line is not None:
                        lines.append(line)
                        continue
                elif cls is Delivered and (
                    not self.hears_deliveries or _to_itself(event.envelope)  # type: ignore[attr-defined]
                ):
                    at += 1
                    continue
                lines.append(self._line(event))
            except Exception as exc:
                # A payload the codec cannot encode: a log with a gap would mislead, so it
                # stops at this event, once the lines before it are written.
                error = _describe(exc)
                break
            at += 1
        if lines:
            data = lines[0] if len(lines) == 1 else b"".join(lines)
            done = 0
            try:
                while done < len(data):  # a signal or a filling disk may cut a write short
                    more = file.write(data[done:] if done else data)
                    if not more:
                        raise OSError(errno.EIO, f"the file took {done} of {len(data)} bytes")
                    done += more
            except Exception as exc:
                # The whole lines the file took before the failure stay (a disk filling up
                # takes part of a batch): the log stops after them.
                for line in lines:
                    if done < len(line):
                        break
                    done -= len(line)
                    self._size += len(line)
                    self._lines += 1
                self._fail(file, _describe(exc))
                return
            self._size += len(data)
            self._lines += len(lines)
        if error is not None:
            self._fail(file, error)

    def _line(self, event: Event) -> bytes:
        cls = type(event)
        carries = _CARRIES_ENVELOPE.get(cls)
        if carries is None:
            carries = _carries_envelope(cls)
        data = self._encode_mention(event, cls) if carries else encode(event)
        line = self._texts.line(data, json_line(data))
        if len(line) > MAX_LINE_BYTES:
            raise ValueError(
                f"a {cls.kind} event is {len(line)} bytes as JSON, more than "
                f"the {MAX_LINE_BYTES} a log line may hold"
            )
        return line

    def _encode_mention(self, event: Event, cls: type[Event]) -> dict[str, Any]:
        """An event about an envelope: in full, or with ``envelope_ref`` if the reader will
        remember the envelope (see the module docstring); remembers it for later lines."""
        envelope: Envelope = event.envelope  # type: ignore[attr-defined]
        key, recipient = envelope.id, envelope.recipient
        referred = self._referable(envelope)
        data: dict[str, Any]
        written_out = _WRITTEN_OUT.get(cls)
        if written_out is not None:
            # Written out: deliveries are nearly half a run's events, and every held message
            # is logged held then released (a spec holds these equal to the codec's
            # encoding, which takes two to five times as long).
            data = {"kind": written_out, "at": encode_float(event.at)}
            if not referred:
                data["envelope"] = encode_envelope(envelope)
            if cls is Held:
                data["reason"] = event.reason  # type: ignore[attr-defined]
            if referred:
                data["envelope_ref"] = key  # last, where the codec's encoding puts it
        elif referred:
            data = encode_without(event, "envelope")
            data["envelope_ref"] = key
        else:
            data = encode(event)
        to = event.to if isinstance(event, Redirected) else recipient
        self._remember(key, to, cls)
        return data

    def _remember(self, key: int, recipient: Address, cls: type[Event]) -> None:
        """One more line mentions envelope ``key``, now addressed to ``recipient``."""
        self._recent[key] = recipient
        if cls is Held:
            if len(self._held) < HELD_REACH:
                self._held[key] = recipient
        elif self._held:
            self._held.pop(key, None)
        self._mentions += 1
        if self._mentions == _GENERATION:
            self._older, self._recent, self._mentions = self._recent, {}, 0

    def _referable(self, envelope: Envelope) -> bool:
        """Whether the reader remembers ``envelope`` as it is: a line may refer to it."""
        key, recipient = envelope.id, envelope.recipient
        known = self._recent.get(key)
        if known is None:
            known = self._older.get(key) or self._held.get(key)
        return known is not None and (known is recipient or known == recipient)

    def _releases(self, events: list[Event], start: int) -> tuple[bytes | None, int]:
        """The line for the releases from ``events[start]`` on, each followed by the delivery
        of the envelope it released, of envelopes the reader remembers, and the index after
        them; ``(None, start)`` if ``events[start]`` does not begin such a pair."""
        refs: list[int] = []
        at, count = start, len(events)
        while at + 1 < count:  # a batch holds at most MAX_PENDING_EVENTS: 2,048 pairs
            released, delivered = events[at], events[at + 1]
            if type(released) is not Released or type(delivered) is not Delivered:
                break
            envelope = released.envelope
            if delivered.envelope is not envelope or not self._referable(envelope):
                break
            key, recipient = envelope.id, envelope.recipient
            self._remember(key, recipient, Released)
            self._remember(key, recipient, Delivered)
            refs.append(key)
            at += 2
        if not refs:
            return None, start
        first = events[start].at
        return json_line(
            {"kind": Released.kind, "at": encode_float(first), "envelope_refs": refs}
        ), at

    def _fail(self, file: LogFile, error: str) -> None:
        """Stop logging: cut the file back to its last full line, close it, report once."""
        self._file = None
        self._stop_flushing()
        self._recent.clear()
        self._older.clear()
        self._held.clear()
        truncated = True
        try:
            file.truncate(self._size)
        except OSError:
            truncated = False
        with contextlib.suppress(OSError):
            file.close()
        self._report(error, truncated=truncated)

    def _report(self, error: str, *, truncated: bool) -> None:
        self.failure = EventLogFailure(
            path=str(self.path),
            line=self._lines + 1,
            error=error,
            kept_bytes=self._size,
            truncated=truncated,
        )
        if self.on_failure is not None:
            with contextlib.suppress(Exception):
                self.on_failure(self.failure)

    def close(self) -> None:
        """Close the file; idempotent, and like ``record`` it never raises. An error on
        close (a network filesystem may report a failed write only then) is reported as a
        failure: the lines were written whole, but the OS may not have kept them."""
        self.flush()
        file, self._file = self._file, None
        if file is None:
            return
        self._stop_flushing()
        try:
            file.close()
        except OSError as exc:
            self._report(f"closing the file failed: {_describe(exc)}", truncated=True)

    def _stop_flushing(self) -> None:
        flusher, self._flusher = self._flusher, None
        self._queue = None
        if flusher is not None:
            flusher.queued.pop(id(self), None)


_FLUSHER: trio.lowlevel.RunVar[_FlushWhenIdle] = trio.lowlevel.RunVar("event_log_flusher")


class _FlushWhenIdle(trio.abc.Instrument):
    """Writes the queues of a trio run's logs when trio is about to wait with no task ready
    (``timeout`` is then how long it would wait), within that time. One per ``trio.run``,
    looking only at logs with events queued: with one instrument per log, a batch of 50
    runs at once called 50 hooks at each of trio's idle moments, 160,000 calls (10-15 % of
    the batch's CPU) for 100 runs."""

    def __init__(self) -> None:
        self.queued: dict[int, JsonlEventLog] = {}
        """Logs with events queued, by ``id``, in the order they queued their first."""

    @classmethod
    def of_this_run(cls) -> _FlushWhenIdle:
        try:
            return _FLUSHER.get()
        except LookupError:
            flusher = cls()
            trio.lowlevel.add_instrument(flusher)
            _FLUSHER.set(flusher)
            return flusher

    def before_io_wait(self, timeout: float) -> None:
        if timeout <= 0 or not self.queued:
            return
        deadline = time.perf_counter() + timeout
        for log in list(self.queued.values()):
            log.flush(within=deadline - time.perf_counter())
            if time.perf_counter() >= deadline:
                return

    def after_run(self) -> None:
        # Logs nobody closed: their events are written as the run that recorded them ends.
        for log in list(self.queued.values()):
            log.flush()


def _check_flushing(flushing: Flushing) -> None:
    if flushing is Flushing.WHEN_IDLE:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            raise RuntimeError(
                "an event log flushed each tick must be opened inside trio.run; "
                "open it there, or use Flushing.EACH_EVENT"
            ) from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


_CARRIES_ENVELOPE: dict[type[Event], bool] = {}
_WRITTEN_OUT: dict[type[Event], str] = {cls: cls.kind for cls in (Delivered, Held, Released)}
"""Envelope events whose lines :meth:`JsonlEventLog._encode_mention` builds itself."""


def _to_itself(envelope: Envelope) -> bool:
    """Whether an actor sent ``envelope`` to itself: its delivery is not written."""
    sender = envelope.sender
    return sender is not None and (sender is envelope.recipient or sender == envelope.recipient)


def _carries_envelope(cls: type[Event]) -> bool:
    """Whether events of ``cls`` have an ``envelope`` field: they are written with references."""
    carries = _CARRIES_ENVELOPE.get(cls)
    if carries is None:
        field = attrs.fields_dict(cls).get("envelope")
        carries = field is not None and typing.get_type_hints(cls).get("envelope") is Envelope
        _CARRIES_ENVELOPE[cls] = carries
    return carries


# ---------------------------------------------------------------------------- reading


class EventLogError(Exception):
    """A log could not be read; the message names the file, what was wrong and what to do."""


class EventLogUnreadable(EventLogError):
    """The file could not be opened or read: missing, a directory, no permission, I/O error."""


class EventLogCorrupt(EventLogError, ValueError):
    """The file is a log, damaged: a bad line that is not the last, a line too long, or a
    reference to an envelope no earlier line defines."""


class NotAnEventLog(EventLogCorrupt):
    """The file's first line is not an event: it is some other file."""


class EventLogTooNew(EventLogError):
    """The log was written in a format newer than this version reads."""


@attrs.frozen(kw_only=True)
class EventLogSummary:
    """What a reading found so far (all of it, once the events are exhausted)."""

    path: str
    lines: int
    """Lines read, blank ones included."""
    events: int
    """Events decoded and yielded."""
    runs: int
    """``log_opened`` events: a log holds one run, a file that holds more was concatenated
    or written by an old version that appended."""
    skipped_unknown: int
    """Events of kinds nobody registered, skipped."""
    unknown_kinds: tuple[str, ...]
    """The first few distinct kinds among them, for the message."""
    truncated_line: int | None
    """1-based number of a last line cut off mid-write, skipped; else ``None``."""

    @property
    def empty(self) -> bool:
        """No event and nothing else: a run that was killed before it wrote anything."""
        return self.events == 0 and self.skipped_unknown == 0 and self.truncated_line is None


_NAMED_UNKNOWN_KINDS = 8


class _BadLine(Exception):
    """A line that does not hold a valid event; the message says why."""


class EventLogStream:
    """The events of one log file, read lazily; iterate once. Use :func:`open_event_log`.

    Iterating raises :class:`EventLogCorrupt` (or :class:`NotAnEventLog`) at the first damaged
    line and :class:`EventLogUnreadable` if reading fails, after yielding the events before it.
    """

    def __init__(self, path: str, file: IO[bytes], *, max_line_bytes: int) -> None:
        self.path = path
        self._file = file
        self._max_line_bytes = max_line_bytes
        self._lines = 0
        self._events = 0
        self._runs = 0
        self._skipped = 0
        self._unknown_kinds: list[str] = []
        self._truncated: int | None = None
        self._seen_event = False
        self._recent: dict[int, Envelope] = {}
        self._older: dict[int, Envelope] = {}
        self._mentions = 0
        self._held: dict[int, Envelope] = {}
        self._texts = TextReader()

    @property
    def summary(self) -> EventLogSummary:
        return EventLogSummary(
            path=self.path,
            lines=self._lines,
            events=self._events,
            runs=self._runs,
            skipped_unknown=self._skipped,
            unknown_kinds=tuple(self._unknown_kinds),
            truncated_line=self._truncated,
        )

    def __iter__(self) -> Iterator[Event]:
        while True:
            raw = self._readline()
            if not raw:
                return
            self._lines += 1
            number = self._lines
            if len(raw) > self._max_line_bytes:
                raise self._corrupt(
                    number,
                    f"the line is longer than {self._max_line_bytes} bytes; the rest was not read",
                )
            if raw.isspace():
                continue
            try:
                event = self._decode(raw, number)
            except _BadLine as exc:
                if not raw.endswith(b"\n") and (self._seen_event or raw.startswith(b'{"kind"')):
                    # The last line (only the last lacks a newline), cut off mid-write.
                    self._truncated = number
                    return
                raise self._corrupt(number, str(exc)) from None
            self._seen_event = True
            if event is None:
                continue
            if isinstance(event, list):
                self._events += len(event)
                yield from event
                continue
            self._events += 1
            if type(event) is LogOpened:
                self._runs += 1
                if event.format > EVENT_LOG_FORMAT:
                    raise EventLogTooNew(
                        f"{self.path}:{number}: the log is in format {event.format}, newer "
                        f"than the {EVENT_LOG_FORMAT} this version of Conclave reads; read "
                        "it with the version that wrote it, or a newer one"
                    )
            yield event

    def _readline(self) -> bytes:
        try:
            # One byte past the limit: a line that long is too long, and no more is read.
            return self._file.readline(self._max_line_bytes + 1)
        except OSError as exc:
            raise EventLogUnreadable(
                f"cannot read {self.path} after line {self._lines} ({_describe(exc)}); "
                "copy what can be read to a file and replay that"
            ) from None

    def _corrupt(self, number: int, why: str) -> EventLogCorrupt:
        if not self._seen_event:
            return NotAnEventLog(
                f"{self.path} is not an event log: line {number} is not an event ({why}); "
                "pass the events.jsonl a run wrote"
            )
        return EventLogCorrupt(
            f"{self.path}:{number}: not a valid event ({why}); the file was edited or "
            "damaged after it was written"
        )

    def _decode(self, raw: bytes, number: int) -> Event | list[Event] | None:
        """The event on line ``number``, the events of a line of releases, or ``None`` for
        a kind nobody registered."""
        data = _parse(raw)
        if not isinstance(data, dict):
            raise _BadLine(f"expected a JSON object, got {type(data).__name__}")
        kind, at = data.get("kind"), data.get("at")
        if not isinstance(kind, str):
            raise _BadLine('no "kind" string')
        if not isinstance(at, int | float) or isinstance(at, bool):
            raise _BadLine(f'{kind!r} has no "at" time')
        if TEXTS_KEY in data:
            # Before the kind is looked up: a line of an unknown kind may define texts too.
            try:
                self._texts.resolve(data, data.pop(TEXTS_KEY))
            except TextError as exc:
                raise _BadLine(_shortened(str(exc))) from None
        cls = find_message_class(kind)
        if cls is None:
            self._skipped += 1
            if len(self._unknown_kinds) < _NAMED_UNKNOWN_KINDS and kind not in self._unknown_kinds:
                self._unknown_kinds.append(kind[:60])
            return None
        if "envelope_refs" in data:
            if cls is not Released:
                raise _BadLine(f"{kind!r} lists envelope_refs; only a 'released' line may")
            return self._releases(data, at)
        if "envelope_ref" in data:
            data["envelope"] = self._referenced(data.pop("envelope_ref"))
        try:
            event = decode(data, Event)
        except DecodeError as exc:
            raise _BadLine(_shortened(str(exc))) from None
        if _carries_envelope(type(event)):
            self._mention(event)
        return event

    def _releases(self, data: dict[str, Any], at: float) -> list[Event]:
        """A line of releases: each envelope it lists was released, then delivered, at its
        time (the writer's batch; see the module docstring)."""
        refs = data.pop("envelope_refs")
        if len(data) != 2:  # kind and at
            raise _BadLine(f"a 'released' line with envelope_refs has other keys: {sorted(data)}")
        if not isinstance(refs, list) or not refs:
            raise _BadLine(f"envelope_refs is {refs!r}, expected a list of envelope ids")
        at = float(at)
        events: list[Event] = []
        for ref in refs:
            envelope = self._referenced(ref)
            released, delivered = (
                Released(at=at, envelope=envelope),
                Delivered(at=at, envelope=envelope),
            )
            self._mention(released)
            self._mention(delivered)
            events += (released, delivered)
        return events

    def _referenced(self, ref: object) -> Envelope:
        if type(ref) is not int:
            raise _BadLine(f"envelope_ref is {ref!r}, expected an envelope id")
        envelope = self._recent.get(ref)
        if envelope is None:
            envelope = self._older.get(ref) or self._held.get(ref)
        if envelope is None:
            raise _BadLine(
                f"envelope_ref {ref} names no envelope written in the "
                f"{REFERENCE_REACH} envelope lines before it, nor one held"
            )
        return envelope

    def _mention(self, event: Event) -> None:
        """Remember the envelope as the writer does, with room to spare: the writer refers
        back at most :data:`REFERENCE_REACH` envelope lines and this keeps every envelope
        for at least that many; it remembers at most :data:`HELD_REACH` held envelopes and
        this up to twice as many (lines of unknown kinds, skipped here, may have released
        some of them)."""
        envelope: Envelope = event.envelope  # type: ignore[attr-defined]
        if type(event) is Redirected:
            envelope = envelope.redirected(event.to)
        self._recent[envelope.id] = envelope
        if type(event) is Held:
            if len(self._held) < 2 * HELD_REACH:
                self._held[envelope.id] = envelope
        elif self._held:
            self._held.pop(envelope.id, None)
        self._mentions += 1
        if self._mentions == REFERENCE_REACH:
            self._older, self._recent, self._mentions = self._recent, {}, 0


_REASON_CHARS = 300


def _shortened(reason: str) -> str:
    """A decode error names the path to the bad field, which in a hostile line can be
    thousands of characters; the message is one line a person reads."""
    return reason if len(reason) <= _REASON_CHARS else reason[: _REASON_CHARS - 1] + "…"


def _parse(raw: bytes) -> Any:
    """JSON of one line. orjson first (fast, and it refuses nesting past 1024 levels rather
    than recurse); the stdlib only for what orjson refuses but a log may hold: strings with
    lone surrogates, which the writer's fallback writes as escapes."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        first_error = str(exc)
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise _BadLine(_shortened(f"not JSON: {first_error}")) from None


@contextlib.contextmanager
def open_event_log(
    path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[EventLogStream]:
    """Open a log for streaming: ``with open_event_log(p) as log: for event in log: ...``;
    then ``log.summary`` says what was skipped. Raises :class:`EventLogUnreadable` if the
    file cannot be opened. Memory stays within a few lines and the envelopes that later
    lines may refer to, whatever the file holds."""
    name = os.fspath(path)
    try:
        file = open(name, "rb")  # noqa: SIM115  (closed by this context manager)
    except FileNotFoundError:
        raise EventLogUnreadable(
            f"no event log at {name}; pass the events.jsonl of a run, or its directory"
        ) from None
    except IsADirectoryError:
        raise EventLogUnreadable(
            f"{name} is a directory; pass the events.jsonl inside a run's directory"
        ) from None
    except PermissionError:
        raise EventLogUnreadable(
            f"cannot read {name}: permission denied; check its permissions or run as its owner"
        ) from None
    except OSError as exc:
        raise EventLogUnreadable(f"cannot open {name} ({_describe(exc)})") from None
    with file:
        yield EventLogStream(name, file, max_line_bytes=max_line_bytes)


@attrs.frozen(kw_only=True)
class EventLogReading:
    events: list[Event]
    truncated_line: int | None
    """1-based number of a damaged last line that was skipped, else ``None``."""
    skipped_unknown: int = 0
    runs: int = 0


def read_event_log(path: str | os.PathLike[str]) -> EventLogReading:
    """All of a log's events in a list, for tests and small logs; stream big ones with
    :func:`open_event_log`. Raises what iterating the stream raises."""
    with open_event_log(path) as log:
        events = list(log)
        summary = log.summary
    return EventLogReading(
        events=events,
        truncated_line=summary.truncated_line,
        skipped_unknown=summary.skipped_unknown,
        runs=summary.runs,
    )
