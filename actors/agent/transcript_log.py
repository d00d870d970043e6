"""The agents' transcripts on disk: ``transcripts.jsonl`` in the run's log directory.

Every message each model saw and said, in order, across all of an agent's rounds and its
presentation. :func:`read_transcripts` gives them back one dict per message: ``agent`` (its
configured id), ``round`` (the agent's round number), ``purpose`` (``round`` or
``present``), ``role``, ``content``, and when present ``tool_calls`` (``id``, ``name``,
``arguments``), ``tool_call_id`` and ``provider_state``. One agent's transcript is its
messages, in file order. The event log keeps what happened (observations); this file keeps
what was said. The lines on disk (format 2: a line per batch of messages appended together,
a message said before as a reference to it) are in :mod:`actors.agent.transcript_lines`.

One file per run, not one per agent: creating a file costs 60-600 µs of kernel CPU on ext4,
and a run of 1,000 agents spent 0.6-1 s of its 2 s creating their transcript files (a run of
10,000: ~5 s), inside the trio thread (measured against the same runs without transcripts).

Long texts are written once, in pieces that later lines refer to (an answer quoted in every
agent's prompt, round after round): a 1 MB answer in a 3-agent run makes 1.1 MB of
transcripts, not 6.2 MB (:mod:`actors.agent.transcript_texts`).

A run's file (``Flushing.WHEN_IDLE``, as its event log) queues lines as messages join the
transcripts and writes them in one write when trio goes idle, once :data:`MAX_PENDING_LINES`
are queued, and when it closes: one ``write`` per line cost a run of 2,000 agents 16,000
system calls, 3-4 µs each here, inside the trio thread. A process killed outright loses at
most the lines queued and the line being written; an actor that crashes loses nothing. A file
made with ``Flushing.EACH_EVENT`` appends each line in one write as the message joins the
transcript. A write that fails (a full disk) stops the file for the rest of the run (a later
line could refer to a piece the failed one defined), and each agent reports it once (an
agent whose lines were queued, when the batch fails); the run goes on without it.
"""

from __future__ import annotations

import os
import resource
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import trio

from conclave.actors.agent.transcript_lines import HEADER, LineReader, LineWriter
from conclave.actors.agent.transcript_texts import PieceError
from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from conclave.runtime.eventlog import Flushing

__all__ = [
    "MAX_PENDING_LINES",
    "OPEN_LIMIT",
    "TRANSCRIPTS",
    "TranscriptError",
    "TranscriptFile",
    "TranscriptLog",
    "read_transcripts",
]

TRANSCRIPTS = "transcripts.jsonl"
"""The run's transcript file, in its log directory."""


MAX_PENDING_LINES = 4_096
"""With ``Flushing.WHEN_IDLE``, at most this many lines wait to be written."""


class TranscriptFile:
    """The run's transcript file, shared by its agents (owned by the run): where it is, the
    pieces of long texts and the messages its lines hold so far, the lines not written yet,
    and the write error that stopped it.

    With ``Flushing.WHEN_IDLE`` it must be made inside ``trio.run`` (the run's
    :class:`_IdleWriter` writes it) and closed (:meth:`close`) when its agents have
    stopped; a failure of a batch written while trio is idle is reported to the agents whose
    lines it held by a callback trio runs next, never from inside the scheduler's hook."""

    def __init__(self, path: Path, *, flushing: Flushing = Flushing.EACH_EVENT) -> None:
        self.path = path
        self.lines = LineWriter()
        self._header = HEADER
        """Written before the first line: a file is begun by its first write."""
        self.failure: str | None = None
        self._pending = bytearray()
        """Queued lines, copied into one buffer: kept as a list of their own, a run's lines
        stayed scattered over the heap until written, which cost a 1,000-agent run 10-30 MB
        more peak RSS."""
        self._queued_lines = 0
        self._writers: dict[int, TranscriptLog] = {}
        """The agents whose lines are queued, by ``id``: they hear a failed batch."""
        self._idle: _IdleWriter | None = (
            _IdleWriter.of_this_run() if flushing is Flushing.WHEN_IDLE else None
        )

    def write(self, log: TranscriptLog, line: bytes) -> None:
        """Write ``log``'s ``line`` now, or queue it (``Flushing.WHEN_IDLE``)."""
        if self._header:
            line, self._header = self._header + line, b""
        idle = self._idle
        if idle is None:
            self._write_out(line, [log], report=TranscriptLog.stopped)
            return
        if not self._queued_lines:
            idle.queued[id(self)] = self
        self._pending += line
        self._queued_lines += 1
        self._writers[id(log)] = log
        if self._queued_lines >= MAX_PENDING_LINES:
            self.flush()

    def flush(self, report: Callable[[TranscriptLog, str], None] | None = None) -> None:
        """Write the queued lines in one write; ``report`` tells each agent whose lines they
        were if it fails."""
        if not self._queued_lines:
            return
        data, writers = self._pending, list(self._writers.values())
        self._pending, self._queued_lines, self._writers = bytearray(), 0, {}
        if self._idle is not None:
            self._idle.queued.pop(id(self), None)
        self._write_out(data, writers, report or TranscriptLog.stopped)

    def _write_out(
        self,
        data: bytes | bytearray,
        writers: list[TranscriptLog],
        report: Callable[[TranscriptLog, str], None],
    ) -> None:
        if self.failure is None:
            view = memoryview(data)
            try:
                descriptor = _OPEN_FILES.descriptor(self.path)
                while view:
                    view = view[os.write(descriptor, view) :]
                return
            except OSError as exc:
                _OPEN_FILES.forget(self.path)
                self.failure = f"cannot write the transcript {self.path}: {exc.strerror or exc}"
                self._idle = None
        for log in writers:
            report(log, self.failure)

    def close(self) -> None:
        """Write the queued lines and close the file (the run has ended: its agents write
        no more); a later line is written at once."""
        self.flush()
        self._idle = None
        _OPEN_FILES.forget(self.path)


_IDLE_WRITER: trio.lowlevel.RunVar[_IdleWriter] = trio.lowlevel.RunVar("transcript_idle_writer")


class _IdleWriter(trio.abc.Instrument):
    """Writes the queues of a trio run's transcript files when trio is about to wait with no
    task ready. One per ``trio.run``, and it looks only at files with lines queued: in a
    batch of 200 runs, an idle moment costs one call, not one per run's file."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self._token = token
        self.queued: dict[int, TranscriptFile] = {}
        """Files with lines queued, by ``id``, in the order they queued their first."""

    @classmethod
    def of_this_run(cls) -> _IdleWriter:
        try:
            return _IDLE_WRITER.get()
        except LookupError:
            writer = cls(trio.lowlevel.current_trio_token())
            trio.lowlevel.add_instrument(writer)
            _IDLE_WRITER.set(writer)
            return writer

    def before_io_wait(self, timeout: float) -> None:
        if timeout > 0 and self.queued:
            # A report records an event, which may wake a task: trio would not see it in
            # this hook (its wait is already decided), so it runs as a callback, which wakes trio.
            for file in list(self.queued.values()):
                file.flush(report=self._report_soon)

    def _report_soon(self, log: TranscriptLog, error: str) -> None:
        self._token.run_sync_soon(log.stopped, error)

    def after_run(self) -> None:
        # Files nobody closed: their lines are written, nobody is left to hear a failure
        # (the file keeps it).
        for file in list(self.queued.values()):
            file.flush(report=lambda log, error: None)


class TranscriptLog:
    """One agent's lines of the run's transcript file; ``on_failure`` hears the error that
    stopped the file, once."""

    def __init__(
        self, file: TranscriptFile, *, agent: str, on_failure: Callable[[str], None]
    ) -> None:
        self.file = file
        self.path = file.path
        self.agent = agent
        self.failure: str | None = None
        self._on_failure = on_failure

    def write(self, round_: int, purpose: CallPurpose, *messages: ChatMessage) -> None:
        """Write ``messages``, appended to the agent's transcript together, as one line."""
        if self.failure is not None:
            return
        file = self.file
        if file.failure is not None:
            self.stopped(file.failure)
            return
        file.write(self, file.lines.line(self.agent, round_, purpose, messages))

    def stopped(self, error: str) -> None:
        """The file stopped on ``error``: this agent writes no more, and says so once."""
        if self.failure is None:
            self.failure = error
            self._on_failure(error)

    def close(self) -> None:
        """Write the file's queued lines and close it if it is open (the run has ended: its
        agents write no more). A later write opens it again."""
        self.file.flush()
        _OPEN_FILES.forget(self.path)


class _OpenFiles:
    """The most recently written transcripts' descriptors, kept open between writes.

    Opening a file for each line cost a batch of 3-agent runs 2-3 ms of CPU per run (20
    lines each); keeping every agent's file open would spend a descriptor per agent, and a
    run of 10,000 agents would run out. So at most ``limit`` stay open, the least recently
    written closed first: an agent writes a burst of lines per round, which hit. Each write
    is unbuffered (see the module docstring for what a crash loses).
    A run closes its agents' files as it ends (:meth:`TranscriptLog.close`), so the open
    ones are those of live agents.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._open: OrderedDict[Path, int] = OrderedDict()

    def descriptor(self, path: Path) -> int:
        descriptor = self._open.get(path)
        if descriptor is not None:
            self._open.move_to_end(path)
            return descriptor
        try:
            descriptor = os.open(path, _APPEND, 0o644)
        except FileNotFoundError:
            # One ``mkdir`` per run (the first agent to write), not one per agent.
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, _APPEND, 0o644)
        self._open[path] = descriptor
        if len(self._open) > self._limit:
            _, oldest = self._open.popitem(last=False)
            os.close(oldest)
        return descriptor

    def forget(self, path: Path) -> None:
        descriptor = self._open.pop(path, None)
        if descriptor is not None:
            os.close(descriptor)


def _limit() -> int:
    """How many transcripts may stay open: an eighth of the process's descriptors, at most
    1,024. A batch keeps every live agent's file open up to there: with 64 (21 runs of 3
    agents), a batch of 3-agent runs at C = 50 reopened a transcript for 10 of each run's
    21 lines (C = 200: 11), an open and a close each (~0.1-0.15 ms of a run's ~12 ms of
    CPU); now each file is opened once, up to C = 340 runs of 3 agents."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_OPEN
    return max(64, min(MAX_OPEN, soft // 8))


MAX_OPEN = 1_024
"""The most transcripts kept open at once, whatever the descriptor limit."""
OPEN_LIMIT = _limit()
"""How many transcripts this process keeps open at most."""
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_OPEN_FILES = _OpenFiles(limit=OPEN_LIMIT)


class TranscriptError(ValueError):
    """A transcript file's line is not what :class:`TranscriptLog` writes."""


def read_transcripts(path: Path) -> Iterator[dict[str, Any]]:
    """The messages of a transcript file (of either format) as the module docstring
    describes them: long texts put together from their pieces, tool call arguments as the
    model sent them. Streams the file. A last line cut off mid-write (a crash) is skipped;
    damage anywhere else, or a format newer than this Conclave's, raises
    :class:`TranscriptError` naming the line."""
    reader = LineReader()
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            if not raw.endswith(b"\n"):
                return  # cut off mid-write: the writer's last line
            try:
                messages = list(reader.messages(orjson.loads(raw)))
            except (orjson.JSONDecodeError, PieceError, KeyError, TypeError) as exc:
                raise TranscriptError(f"{path}:{number}: {exc}") from None
            yield from messages
