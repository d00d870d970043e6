"""The diff of what a run changed under its writable context paths, saved in its log dir.

One unified diff for every changed file, in path order. A path is written as ``a/`` or
``b/`` and the absolute path without its leading slash (``--- a/home/me/project/x.py``), so
``patch -p1 -d /`` applies the file and ``patch -R -p1 -d /`` undoes it; a new file is
``--- /dev/null``, a deleted one ``+++ /dev/null``. What has no line diff gets one line:
binary content (``Binary files a/P and b/P differ``, as diff says it), a file past
:data:`~actors.workspace.file_index.KEEP_FILE_BYTES`, a file whose earlier content was not
kept (past :data:`~actors.workspace.file_index.KEEP_BUDGET`). A rename (its content unchanged)
is git's extended header (``diff --git``, ``similarity index 100%``, ``rename from``/``rename
to``), which both ``git apply`` and ``patch`` read, forward and reversed. Names and contents
that are not UTF-8 are written byte for byte.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from conclave.actors.workspace.file_index import (
    KEEP_FILE_BYTES,
    FileIndex,
    is_binary,
    read_text_file,
)
from conclave.actors.workspace.writes import PathWrite, WriteKind, Writes

__all__ = ["DIFF_FILE", "diff_text", "write_diff"]

DIFF_FILE = "context_path_writes.diff"
"""The diff of every changed file, in the run's log directory."""

_NULL = "/dev/null"


def _side(prefix: str, path: str) -> str:
    return f"{prefix}/{path.lstrip('/')}"


def write_diff(writes: Writes, before: FileIndex, path: Path) -> None:
    """Write the diff of ``writes`` (``before`` holds the earlier content) to ``path``,
    reading the files' current content (blocking)."""
    path.write_text(diff_text(writes, before), encoding="utf-8", errors="surrogateescape")


def diff_text(writes: Writes, before: FileIndex) -> str:
    """The diff of ``writes``, reading the current content of new and modified files."""
    return "".join(_file_diff(write, before) for write in writes.files)


def _file_diff(write: PathWrite, before: FileIndex) -> str:
    path = write.path
    if write.kind is WriteKind.RENAMED:
        assert write.renamed_from is not None
        was, now = write.renamed_from.lstrip("/"), path.lstrip("/")
        return (
            f"diff --git a/{was} b/{now}\nsimilarity index 100%\n"
            f"rename from {was}\nrename to {now}\n"
        )
    old_name = _NULL if write.kind is WriteKind.NEW else _side("a", path)
    new_name = _NULL if write.kind is WriteKind.DELETED else _side("b", path)
    new = b"" if write.kind is WriteKind.DELETED else read_text_file(path)
    if new is None:
        return _summary(old_name, new_name, "it cannot be read now")
    old = b"" if write.kind is WriteKind.NEW else before.kept.get(path)
    if is_binary(new) or (old is not None and is_binary(old)):
        return f"Binary files {old_name} and {new_name} differ\n"
    state = before.files.get(path)
    if len(new) > KEEP_FILE_BYTES or (old is None and state and state.size > KEEP_FILE_BYTES):
        return _summary(old_name, new_name, f"too large to show: over {KEEP_FILE_BYTES:,} bytes")
    if old is None:
        return _summary(old_name, new_name, "its content before the run was not kept")
    lines = difflib.unified_diff(
        _lines(old), _lines(new), fromfile=old_name, tofile=new_name, lineterm="\n"
    )
    text = "".join(_ended(line) for line in lines)
    return text or _summary(old_name, new_name, "an empty file")


def _summary(old_name: str, new_name: str, why: str) -> str:
    return f"Files {old_name} and {new_name} differ ({why})\n"


def _lines(data: bytes) -> list[str]:
    """Lines as diff sees them: split at ``\\n`` only, each keeping it."""
    *whole, last = data.decode("utf-8", errors="surrogateescape").split("\n")
    return [f"{line}\n" for line in whole] + ([last] if last else [])


def _ended(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
