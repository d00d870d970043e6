"""The WriteTracker actor: which files the run wrote under its writable context paths.

The coordinator asks it for a baseline (:class:`TakeBaseline`) where the modes table puts
the writing phase (:class:`~config.schema.context.ContextWritePhase`): at coordination start
for a single agent with refinement off, otherwise right before the final presentation; and
for the diff (:class:`DiffWrites`) once the writing is over. Both walks run in a worker
thread. The first baseline stands: a presentation asked again (its presenter crashed, or
the coordinator restarted) is measured from the same one, so nothing it wrote the first
time is lost.

Both compare content hashes (:mod:`actors.workspace.file_index`): new, modified, deleted and
renamed files are told apart, whatever their modification times say; the list goes to
:data:`~actors.workspace.writes.WRITES_FILE` and the diff of every changed file to
:data:`~actors.workspace.write_diff.DIFF_FILE` in the run's log dir.

What it knows is a :class:`TrackerState` owned by the run, so a restarted tracker keeps the
baseline, and the run's result reads the writes from it. A run that ends before the
coordinator asked for the diff (timeout, Ctrl+C) still reports what was written:
:meth:`TrackerState.settle` walks once more, synchronously, when the run concludes.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from conclave.actors.workspace.baseline_file import keep_baseline
from conclave.actors.workspace.events import ContextPathsChanged, ContextWritesTracked
from conclave.actors.workspace.file_index import FileIndex, index_files
from conclave.actors.workspace.write_diff import DIFF_FILE, write_diff
from conclave.actors.workspace.writes import WRITES_FILE, Writes, diff, write_list
from conclave.config.schema.context import ContextPath
from conclave.runtime import Actor, ActorContext, Address, Envelope, Message, message

__all__ = [
    "TRACKER",
    "BaselineTaken",
    "DiffWrites",
    "TakeBaseline",
    "TrackerState",
    "WriteTracker",
    "WritesFound",
]

TRACKER = Address("write_tracker")


@message()
class TakeBaseline(Message):
    """Snapshot the writable context paths now, unless a baseline exists already."""


@message()
class BaselineTaken(Message):
    files: int


@message()
class DiffWrites(Message):
    """The writing is over: compare with the baseline, keep and report the writes."""


@message()
class WritesFound(Message):
    writes: Writes


@attrs.define(kw_only=True)
class TrackerState:
    """The tracker's knowledge, owned by the run (it survives a restart of the tracker)."""

    context_paths: tuple[ContextPath, ...]
    """The writable ones."""
    list_dir: Path | None
    """Where :data:`~actors.workspace.writes.WRITES_FILE` and
    :data:`~actors.workspace.write_diff.DIFF_FILE` go (the run's log dir)."""
    excluded: tuple[Path, ...] = ()
    """The run's own directories (its log, its workspaces), when a context path holds them:
    what the run writes there is not a write to the user's files."""
    baseline: FileIndex | None = None
    writes: Writes | None = None
    """Set by the diff after the writing phase; ``None`` before."""
    diff_written: bool = False
    """Whether :data:`~actors.workspace.write_diff.DIFF_FILE` was written."""

    @property
    def roots(self) -> tuple[Path, ...]:
        return tuple(c.path for c in self.context_paths)

    def list_file(self) -> Path | None:
        return self.list_dir / WRITES_FILE if self.list_dir is not None else None

    def diff_file(self) -> Path | None:
        if self.list_dir is None or not self.diff_written:
            return None
        return self.list_dir / DIFF_FILE

    def walk(self) -> FileIndex:
        """The tracked files now (blocking): the first walk keeps small files' content for
        the diff; a later one reads only the files whose ``lstat`` moved since the baseline.
        Protected paths are read-only and the run's own directories are not the user's
        files, so neither is walked."""
        protected = (p for c in self.context_paths for p in c.protected)
        return index_files(
            self.roots,
            skip=(*protected, *self.excluded),
            previous=self.baseline,
            keep=self.baseline is None,
        )

    def conclude(self, after: FileIndex) -> Writes:
        """Record the changes since the baseline and, when there are any, write their list
        and their diff (blocking)."""
        assert self.baseline is not None
        writes = self.writes = diff(self.baseline, after)
        if writes.count and self.list_dir is not None:
            try:
                write_list(writes, self.list_dir / WRITES_FILE)
                write_diff(writes, self.baseline, self.list_dir / DIFF_FILE)
                self.diff_written = True
            except OSError:
                self.list_dir = None  # events name no file that is not there
        return writes

    def keep_baseline(self) -> None:
        """Keep the baseline in the log dir for the run that resumes this paused one
        (blocking; see :mod:`actors.workspace.baseline_file`). Nothing to keep without a
        baseline or a log dir; a failed write only makes the resumed run measure from the
        resume on."""
        if self.baseline is None or self.list_dir is None:
            return
        try:
            keep_baseline(self.baseline, self.excluded, self.list_dir)
        except OSError:
            return

    def settle(self) -> Writes | None:
        """The writes for the run's result: the diff already made, or one made now if the
        run ended before it was asked for (blocking); ``None`` if nothing was tracked."""
        if self.baseline is None:
            return None
        if self.writes is None:
            return self.conclude(self.walk())
        return self.writes


class WriteTracker(Actor):
    def __init__(self, context: ActorContext, *, state: TrackerState) -> None:
        super().__init__(context)
        self.state = state

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        state = self.state
        if isinstance(payload, TakeBaseline):
            if state.baseline is None:
                state.baseline = await trio.to_thread.run_sync(state.walk)
                self.context.record(
                    ContextWritesTracked(
                        at=trio.current_time(),
                        paths=tuple(str(p) for p in state.roots),
                        files=len(state.baseline),
                    )
                )
            self.context.reply(envelope, BaselineTaken(files=len(state.baseline)))
        elif isinstance(payload, DiffWrites):
            writes = Writes()
            if state.baseline is not None:
                after = await trio.to_thread.run_sync(state.walk)
                writes = await trio.to_thread.run_sync(state.conclude, after)
                list_file = state.list_file() if writes.count else None
                diff_file = state.diff_file() if writes.count else None
                self.context.record(
                    ContextPathsChanged(
                        at=trio.current_time(),
                        files=writes.files,
                        list_file=str(list_file) if list_file is not None else None,
                        diff_file=str(diff_file) if diff_file is not None else None,
                    )
                )
            self.context.reply(envelope, WritesFound(writes=writes))
