"""Replacing a file whole or not at all: the one "write beside it, sync, rename over it".

A file another process (a resumed run, ``conclave report``, a later cache lookup) reads must
never be seen half-written, even after a ``kill -9`` or a power cut. :func:`write_atomically`
is the one place that does it. It lives in ``config``, which the domain, the UI and the
benchmarks may all import, and whose package imports nothing: in ``conclave.runtime`` it would
load the whole kernel (trio, cattrs: some 100 ms measured) into ``conclave report`` and the
bench's flag parsing, which need none of it. It imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["temporary_name", "write_atomically"]

_NAME_MAX = 255
"""The longest file name, in bytes, where the file system does not say (most allow 255)."""


def temporary_name(name: str, directory: Path | int) -> str:
    """The name of a new temporary file for ``name`` in ``directory`` (a path, or an open
    directory's descriptor): ``.<name>.<16 hex digits>.tmp``, hidden, unique and recognisably
    its. The name part is cut short (by whole characters) when the whole would be longer than
    the file system allows, so that the temporary's name fits whenever ``name`` does: a valid
    name of 234 to 255 bytes is never refused as "File name too long"."""
    token = secrets.token_hex(8)
    room = _name_max(directory) - len(f"..{token}.tmp")
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}.{token}.tmp"


def _name_max(directory: Path | int) -> int:
    try:
        most = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return _NAME_MAX
    return most if most > 0 else _NAME_MAX  # -1: no limit said


def write_atomically(path: Path, data: str | bytes) -> None:
    """Make ``path`` hold ``data`` (text is written as UTF-8), replacing any older file
    atomically. Blocking: from trio, call it in a worker thread.

    What a crash at each point leaves:

    - while the temporary file (:func:`temporary_name`, beside ``path``) is written or
      synced: the old ``path`` whole (or no ``path``) and possibly that temporary file, which
      no reader opens (a crash, unlike an exception, runs no clean-up);
    - after the sync, before the rename: the same, the temporary complete but unused;
    - after the rename: the new ``path`` whole; the directory is synced too, so a power cut
      after this returns does not bring the old file back.

    An exception (a full disk, a read-only directory) removes the temporary file and leaves
    the old ``path`` untouched, then propagates. The new file gets the permissions of any new
    file (``0o666`` less the umask).
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    temporary = path.with_name(temporary_name(path.name, path.parent))
    # Created as any new file (0o666 less the umask), exclusively: a name taken already is
    # an error, never someone else's file written over.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """Make the rename in ``directory`` durable (where a directory can be opened: not on
    every platform or file system, and then the rename is as durable as the system makes it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
