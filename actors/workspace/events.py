"""What the workspaces and the WriteTracker record: for people (progress, stream-json, the
log) the :class:`DomainEvent` ones; the machinery's steps (a baseline taken, an agent's
context paths opened) only in the log."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.workspace.writes import PathWrite
from conclave.config.schema import FinalAnswerStrategy
from conclave.runtime import Event, message

__all__ = [
    "ContextPathsChanged",
    "ContextWritesOpened",
    "ContextWritesTracked",
    "FinalWorkspaceSaved",
    "PresentingForWrites",
    "SnapshotPublished",
]


@message()
class SnapshotPublished(DomainEvent):
    """An accepted answer's workspace, readable by every agent shown the answer."""

    agent: str
    label: str
    path: str


@message()
class PresentingForWrites(DomainEvent):
    """The final presentation runs although the strategy alone would skip it: writable
    context paths need someone to write them."""

    presenter: str
    strategy: FinalAnswerStrategy
    """The strategy the run asked for."""
    reason: str


@message()
class ContextWritesTracked(Event):
    """The WriteTracker took its snapshot of the writable context paths."""

    paths: tuple[str, ...]
    files: int


@message()
class ContextWritesOpened(Event):
    """An agent may now write its writable context paths (its sandbox remounted them rw)."""

    agent: str
    paths: tuple[str, ...]


@message()
class ContextPathsChanged(DomainEvent):
    """What the writing phase changed under the writable context paths: each path with
    what happened to it (new, modified, deleted, renamed), in path order."""

    files: tuple[PathWrite, ...]
    list_file: str | None = None
    """Where the full list was written (``context_path_writes.txt``), if anywhere."""
    diff_file: str | None = None
    """Where the diff of every changed file was written (``context_path_writes.diff``)."""


@message()
class FinalWorkspaceSaved(DomainEvent):
    """The deliverable: the workspace the final answer comes with, copied to ``final/``."""

    agent: str
    path: str
