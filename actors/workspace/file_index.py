"""What the files under the writable context paths hold: an index by content hash.

The WriteTracker indexes them before the writing phase and again after it
(:mod:`actors.workspace.writes` compares the two). Each regular file is recorded with its
SHA-256 and its ``lstat`` (size, mtime, ctime, inode); a symbolic link by its target's
text, never followed. A content change is seen whatever the modification time says: a
command may set the mtime back (``touch -d``), but not the ctime, which the kernel moves on
every write and every ``utime``.

Keeping it cheap for big trees: the second index reuses the first's hash for every file
whose ``lstat`` is unchanged, so only the files the run touched are read again. The first
index reads every file once (measured by ``benchmarks/tracker_bench.py``), and keeps the
content of small text files, up to :data:`KEEP_BUDGET` bytes in all, so that the diff of a
file the run changed can show what it was.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

__all__ = [
    "KEEP_BUDGET",
    "KEEP_FILE_BYTES",
    "FileIndex",
    "FileState",
    "index_files",
    "is_binary",
    "read_text_file",
]

KEEP_FILE_BYTES = 256 * 1024
"""A file up to this size gets a line diff; a larger one is summarised (sizes only)."""
KEEP_BUDGET = 32 * 1024 * 1024
"""At most this many bytes of earlier content are kept per run (in memory, the first files
walked): past it a changed file's diff says its earlier content was not kept."""
_CHUNK = 1024 * 1024
_BINARY_PROBE = 8192


def is_binary(data: bytes) -> bool:
    """Content that is not text: a NUL byte near the start (as git and diff decide)."""
    return b"\x00" in data[:_BINARY_PROBE]


@attrs.frozen(kw_only=True)
class FileState:
    """One file as the index saw it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    link: bool
    """A symbolic link: ``digest`` hashes its target's text."""
    digest: bytes

    def same_stat(self, info: os.stat_result) -> bool:
        """Whether ``info`` (an ``lstat``) says the file is as it was: then its content is."""
        return (
            self.size == info.st_size
            and self.mtime_ns == info.st_mtime_ns
            and self.ctime_ns == info.st_ctime_ns
            and self.inode == info.st_ino
            and self.link == stat.S_ISLNK(info.st_mode)
        )


@attrs.define
class FileIndex:
    """Absolute path → :class:`FileState`, and the content kept for diffs."""

    files: dict[str, FileState] = attrs.Factory(dict)
    kept: dict[str, bytes] = attrs.Factory(dict)
    """Earlier content of small text files (see :data:`KEEP_BUDGET`)."""

    def __len__(self) -> int:
        return len(self.files)


def _state(info: os.stat_result, digest: bytes) -> FileState:
    return FileState(
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        ctime_ns=info.st_ctime_ns,
        inode=info.st_ino,
        link=stat.S_ISLNK(info.st_mode),
        digest=digest,
    )


def _open_regular(path: str) -> tuple[int, os.stat_result] | None:
    """A read descriptor for the regular file at ``path`` and its ``fstat``; ``None`` when it
    is gone, or became a link or something else meanwhile (never follows a link, never
    blocks on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENXIO, errno.ENOTDIR):
            return None  # gone, or no longer a regular file
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def read_text_file(path: str) -> bytes | None:
    """Up to :data:`KEEP_FILE_BYTES` + 1 bytes of the regular file at ``path`` (a link's
    target text for a link), or ``None`` when it is not there or cannot be read: what a
    diff shows."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return os.fsencode(os.readlink(path))
        opened = _open_regular(path)
        if opened is None:
            return None
        fd, _ = opened
        with os.fdopen(fd, "rb") as file:
            return file.read(KEEP_FILE_BYTES + 1)
    except OSError:
        return None


def index_files(
    roots: Iterable[Path],
    *,
    skip: Iterable[Path] = (),
    previous: FileIndex | None = None,
    keep: bool = False,
) -> FileIndex:
    """Every regular file and symbolic link under ``roots`` (files or directories), except
    under ``skip`` (not even walked). A file whose ``lstat`` matches its state in
    ``previous`` keeps that hash unread; ``keep`` keeps small text files' content. Blocking:
    call it in a worker thread. Links are not followed (a link out of a context path does
    not make its target tracked); a file that vanishes mid-walk is left out, and so is
    anything else that is not a file (a FIFO, a socket)."""
    skipped = {str(p) for p in skip}
    known = previous.files if previous is not None else {}
    index = FileIndex()
    budget = KEEP_BUDGET if keep else 0
    for path in _paths(roots, skipped):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        earlier = known.get(path)
        if earlier is not None and earlier.same_stat(info):
            index.files[path] = earlier
            continue
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.fsencode(os.readlink(path))
            except OSError:
                continue
            index.files[path] = _state(info, hashlib.sha256(b"link:" + target).digest())
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        try:
            read = _read(path, keep=budget > 0)
        except OSError:
            # Unreadable (permissions, I/O error): tracked by its lstat alone, so a change
            # to it is still seen, and it is not taken for deleted.
            index.files[path] = _state(info, _stat_digest(info))
            continue
        if read is None:
            continue
        state, content = read
        index.files[path] = state
        if content is not None and len(content) <= budget:
            index.kept[path] = content
            budget -= len(content)
    return index


def _stat_digest(info: os.stat_result) -> bytes:
    stamp = f"unread:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"
    return hashlib.sha256(stamp.encode()).digest()


def _read(path: str, *, keep: bool) -> tuple[FileState, bytes | None] | None:
    """The file's state (hashed in chunks) and, when ``keep`` and it is small text, its
    content."""
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, info = opened
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb", buffering=0) as file:
        # A small file in one read sized by fstat (no buffer allocated per file); a large
        # one in chunks, never held whole.
        first = file.read(info.st_size + 1 if info.st_size < _CHUNK else _CHUNK)
        digest.update(first)
        small = len(first) <= KEEP_FILE_BYTES
        while chunk := file.read(_CHUNK):
            small = False
            digest.update(chunk)
    content = first if keep and small and not is_binary(first) else None
    return _state(info, digest.digest()), content


def _paths(roots: Iterable[Path], skipped: set[str]) -> Iterator[str]:
    for root in roots:
        if str(root) in skipped:
            continue
        if not root.is_dir() or root.is_symlink():
            yield str(root)
            continue
        for directory, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = [d for d in dirs if os.path.join(directory, d) not in skipped]
            for name in files:
                path = os.path.join(directory, name)
                if path not in skipped:
                    yield path
