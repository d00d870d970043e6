"""What a run wrote to its writable context paths: mtime snapshots, their diff, the footer.

A snapshot records every file under the writable context paths by path and modification
time only (no content: a context path may be a large repository). After the writing phase
a second snapshot is compared with it: a file whose mtime is newer was modified, a file the
first did not have is new. Protected paths are read-only, so they are not tracked.

On filesystems with coarse timestamps, a file rewritten within the same tick as the first
snapshot keeps its mtime and is not reported; ext4, xfs, btrfs and tmpfs keep nanoseconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

__all__ = [
    "FOOTER_LIMIT",
    "WRITES_FILE",
    "MtimeSnapshot",
    "Writes",
    "diff",
    "footer",
    "mtime_snapshot",
    "write_list",
]

FOOTER_LIMIT = 5
"""Up to this many written files are listed under the answer; more are counted, and listed
in :data:`WRITES_FILE`."""
WRITES_FILE = "context_path_writes.txt"
"""The full list of written files, one path a line, in the run's log directory."""

MtimeSnapshot = dict[str, int]
"""Absolute file path → ``st_mtime_ns``."""


@attrs.frozen(kw_only=True)
class Writes:
    """Files written to the writable context paths, each list sorted."""

    new: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return len(self.new) + len(self.modified)

    def paths(self) -> list[str]:
        """Every written file, in path order."""
        return sorted((*self.new, *self.modified))


def mtime_snapshot(roots: Iterable[Path], *, skip: Iterable[Path] = ()) -> MtimeSnapshot:
    """Every regular file under ``roots`` (files or directories), by mtime, except under
    ``skip`` (not even walked). Blocking: call it in a worker thread. Symlinks are not
    followed (a link out of a context path does not make its target tracked); a file that
    vanishes mid-walk is left out."""
    skipped = {str(p) for p in skip}
    snapshot: MtimeSnapshot = {}
    for path in _files(roots, skipped):
        try:
            stat = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        snapshot[path] = stat.st_mtime_ns
    return snapshot


def _files(roots: Iterable[Path], skipped: set[str]) -> Iterator[str]:
    for root in roots:
        if str(root) in skipped:
            continue
        if root.is_file():
            yield str(root)
            continue
        for directory, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = [d for d in dirs if os.path.join(directory, d) not in skipped]
            for name in files:
                path = os.path.join(directory, name)
                if path not in skipped:
                    yield path


def diff(before: MtimeSnapshot, after: MtimeSnapshot) -> Writes:
    """New files (in ``after`` only) and modified ones (a newer mtime)."""
    new = sorted(path for path in after if path not in before)
    modified = sorted(path for path, mtime in after.items() if before.get(path, mtime) < mtime)
    return Writes(new=tuple(new), modified=tuple(modified))


def footer(writes: Writes, list_file: Path | None) -> str | None:
    """The lines under the final answer: none when nothing was written; each path for up to
    :data:`FOOTER_LIMIT` files; past that, the count and where the full list is."""
    count = writes.count
    if count == 0:
        return None
    if count <= FOOTER_LIMIT:
        return "\n".join(["Files written to context paths:", *(f"  {p}" for p in writes.paths())])
    where = f"; the full list is in {list_file}" if list_file is not None else ""
    return f"{count} files written to context paths{where}"


def write_list(writes: Writes, path: Path) -> None:
    """Write every written file's path to ``path``, one a line (blocking)."""
    text = "".join(f"{p}\n" for p in writes.paths())
    path.write_text(text, encoding="utf-8", errors="surrogateescape")  # names are bytes
