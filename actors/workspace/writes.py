"""What a run changed under its writable context paths: new, modified, deleted and renamed
files, the footer that says so, and the list file.

Two :class:`~actors.workspace.file_index.FileIndex` (before and after the writing phase) are
compared by content hash: a path only after is new, only before is deleted, in both with
another hash is modified. A deleted file whose content reappears at a new path was renamed
(each new path takes the first deleted one, in path order, with its content); a file moved
and changed in one go is a deletion and a new file. Protected paths are read-only, so they
are not tracked.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from pathlib import Path

import attrs

from conclave.actors.workspace.file_index import FileIndex

__all__ = [
    "FOOTER_LIMIT",
    "WRITES_FILE",
    "PathWrite",
    "WriteKind",
    "Writes",
    "diff",
    "footer",
    "write_list",
]

FOOTER_LIMIT = 5
"""Up to this many changed files are listed under the answer; more are counted, and listed
in :data:`WRITES_FILE`."""
WRITES_FILE = "context_path_writes.txt"
"""The full list of changed files, one a line (``KIND<tab>PATH``; a rename
``renamed<tab>FROM<tab>TO``), in the run's log directory."""


class WriteKind(enum.Enum):
    """What happened to one path."""

    NEW = "new"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"


@attrs.frozen(kw_only=True)
class PathWrite:
    """One changed path: for a rename, ``path`` is where the file is now."""

    path: str
    kind: WriteKind
    renamed_from: str | None = None


@attrs.frozen(kw_only=True)
class Writes:
    """Every path the run changed under its writable context paths, in path order."""

    files: tuple[PathWrite, ...] = ()

    @classmethod
    def of(
        cls,
        *,
        new: Iterable[str] = (),
        modified: Iterable[str] = (),
        deleted: Iterable[str] = (),
        renamed: Iterable[tuple[str, str]] = (),
    ) -> Writes:
        """The writes from lists of paths; ``renamed`` holds (from, to) pairs."""
        files = [
            *(PathWrite(path=p, kind=WriteKind.NEW) for p in new),
            *(PathWrite(path=p, kind=WriteKind.MODIFIED) for p in modified),
            *(PathWrite(path=p, kind=WriteKind.DELETED) for p in deleted),
            *(PathWrite(path=to, kind=WriteKind.RENAMED, renamed_from=was) for was, to in renamed),
        ]
        return cls(files=tuple(sorted(files, key=lambda f: f.path)))

    @property
    def count(self) -> int:
        return len(self.files)

    def paths(self, kind: WriteKind) -> tuple[str, ...]:
        """The paths changed that way, in path order."""
        return tuple(f.path for f in self.files if f.kind is kind)

    def tally(self) -> str:
        """``2 new, 1 deleted``: how many of each kind, the kinds that occur only."""
        counts = [(kind, len(self.paths(kind))) for kind in WriteKind]
        return ", ".join(f"{n} {kind.value}" for kind, n in counts if n)


def diff(before: FileIndex, after: FileIndex) -> Writes:
    """What changed from ``before`` to ``after``, by content hash."""
    old, now = before.files, after.files
    gone = sorted(path for path in old if path not in now)
    made = sorted(path for path in now if path not in old)
    modified = sorted(p for p, state in now.items() if p in old and old[p].digest != state.digest)
    by_content: dict[bytes, list[str]] = {}
    for path in gone:
        by_content.setdefault(old[path].digest, []).append(path)
    renamed: list[tuple[str, str]] = []
    new: list[str] = []
    for path in made:
        sources = by_content.get(now[path].digest)
        if sources:
            renamed.append((sources.pop(0), path))
        else:
            new.append(path)
    moved = {was for was, _ in renamed}
    deleted = [path for path in gone if path not in moved]
    return Writes.of(new=new, modified=modified, deleted=deleted, renamed=renamed)


def _line(write: PathWrite) -> str:
    if write.kind is WriteKind.RENAMED:
        return f"{write.kind.value:<9} {write.renamed_from} -> {write.path}"
    return f"{write.kind.value:<9} {write.path}"


def footer(writes: Writes, list_file: Path | None, diff_file: Path | None = None) -> str | None:
    """The lines under the final answer: none when nothing changed; each path with what
    happened to it for up to :data:`FOOTER_LIMIT` files; past that, the counts and where
    the full list is. Both name the diff file when there is one."""
    count = writes.count
    if count == 0:
        return None
    where_diff = f"; the diff is in {diff_file}" if diff_file is not None else ""
    if count <= FOOTER_LIMIT:
        heading = f"Files changed in context paths{where_diff}:"
        return "\n".join([heading, *(f"  {_line(f)}" for f in writes.files)])
    where = f"; the full list is in {list_file}" if list_file is not None else ""
    return f"{count} files changed in context paths ({writes.tally()}){where}{where_diff}"


def write_list(writes: Writes, path: Path) -> None:
    """Write every changed path to ``path``, one a line: ``KIND<tab>PATH``, a rename
    ``renamed<tab>FROM<tab>TO`` (blocking)."""
    lines = []
    for write in writes.files:
        if write.kind is WriteKind.RENAMED:
            lines.append(f"{write.kind.value}\t{write.renamed_from}\t{write.path}\n")
        else:
            lines.append(f"{write.kind.value}\t{write.path}\n")
    path.write_text("".join(lines), encoding="utf-8", errors="surrogateescape")  # names are bytes
