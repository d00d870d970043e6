"""Opening what the path policy resolved, so that a path swapped after the check cannot escape.

The policy judges a resolved path; by the time it is opened, a component may have become a
symlink (an agent's shell runs concurrently). So every open here does not follow a link in
the final component (``O_NOFOLLOW``), and afterwards asks the kernel where the descriptor
really is (``/proc/self/fd``): anything but the checked path is refused. Where ``/proc`` is
absent, the path is opened one component at a time, following no link at all.

Writes never open the target itself: they open its directory, check that, and work relative
to that descriptor, so nothing is created outside even for a moment; the new content goes
to a temporary file that is renamed over the target, so a reader (or a cancelled call) sees
the old file or the new one, never half. A single-file grant is the exception
(:func:`write_in_place`): the sandboxes bind-mount that file's inode, and a rename would
leave them showing the old one.

Everything here blocks: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from conclave.actors.tools.paths import PathRefused

__all__ = [
    "FileChanged",
    "landed",
    "open_dir",
    "open_file",
    "read_bytes",
    "remove_file",
    "size_hint",
    "write_atomic",
    "write_in_place",
]

_PROC = Path("/proc/self/fd")
_HAS_PROC = _PROC.is_dir()
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class FileChanged(PathRefused):
    """The path changed between the policy's check and the open."""


def landed(fd: int) -> Path | None:
    """Where the open descriptor ``fd`` really is, or ``None`` where ``/proc`` is absent."""
    if not _HAS_PROC:
        return None
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


def _changed(path: Path, where: object) -> FileChanged:
    return FileChanged(
        f"the path {str(path)!r} changed while it was being opened (it now leads to "
        f"{str(where)!r}); nothing was done: use a path that is not a symbolic link"
    )


def _became_link(path: Path) -> FileChanged:
    return FileChanged(
        f"the path {str(path)!r} became a symbolic link after it was checked; "
        "nothing was done: use a path that is not a symbolic link"
    )


def _walk_open(path: Path, flags: int) -> int:
    """Open ``path`` one component at a time, following no link anywhere: where ``/proc``
    cannot say where a descriptor landed, this makes sure it lands where it was sent (a
    resolved path has no links in it, so a link found now was swapped in)."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        partial = Path("/")
        for name in path.parts[1:-1]:
            partial = partial / name
            try:
                child = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                if os.path.islink(partial):
                    raise _became_link(partial) from None
                raise
            os.close(fd)
            fd = child
        return os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=fd)
    finally:
        os.close(fd)


def _open_checked(path: Path, flags: int, *, dir_fd: int | None = None) -> int:
    """Open ``path`` (or ``path.name`` relative to its verified directory ``dir_fd``)
    without following a link in its last component, then make sure it is where it was
    sent."""
    try:
        if dir_fd is not None:
            fd = os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
        elif _HAS_PROC:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        else:
            fd = _walk_open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _became_link(path) from None
        raise
    where = landed(fd)
    if where is not None and where != path:
        os.close(fd)
        raise _changed(path, where)
    return fd


def size_hint(path: Path) -> int:
    """The size of what ``path`` names now (0 if nothing): only to choose where its I/O
    runs, never to decide what may be read."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def open_file(path: Path) -> int:
    """A read descriptor for the regular file at the checked ``path``."""
    fd = _open_checked(path, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise IsADirectoryError(errno.EISDIR, f"{path} is {kind}")
    return fd


def open_dir(path: Path) -> int:
    """A descriptor for the directory at the checked ``path``."""
    return _open_checked(path, _DIR_FLAGS)


def read_bytes(path: Path, *, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file at the checked ``path``."""
    fd = open_file(path)
    with os.fdopen(fd, "rb") as file:
        return file.read(limit)


def _parent_fd(path: Path, *, make: bool) -> int:
    """A descriptor for ``path``'s directory, creating missing ones when ``make``: each
    new directory is made and opened relative to its verified parent, never by path."""
    parent = path.parent
    missing: list[str] = []
    while True:
        try:
            fd = open_dir(parent)
            break
        except FileNotFoundError:
            if not make or parent == parent.parent:
                raise
            missing.append(parent.name)
            parent = parent.parent
    try:
        for name in reversed(missing):
            # One made meanwhile is opened and verified below like any other.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            parent = parent / name
            child = _open_checked(parent, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_atomic(path: Path, data: bytes, *, make_parents: bool = True) -> None:
    """Replace (or create) the file at the checked ``path`` with ``data``, all or nothing,
    keeping an existing file's permissions."""
    dir_fd = _parent_fd(path, make=make_parents)
    try:
        mode = 0o644
        try:
            current = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISLNK(current.st_mode):
                raise _became_link(path)
            if not stat.S_ISREG(current.st_mode):
                raise IsADirectoryError(errno.EISDIR, f"{path} is not a regular file")
            mode = stat.S_IMODE(current.st_mode)
        temp = f".{path.name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode,
            dir_fd=dir_fd,
        )
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.chmod(temp, mode, dir_fd=dir_fd)
            os.replace(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(temp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def write_in_place(path: Path, data: bytes) -> None:
    """Overwrite (or create) the regular file at the checked ``path`` with ``data``, keeping
    its inode: a bind mount of that one file (docker, bubblewrap) sees the new content, where
    a rename over it would leave the mount on the old file. Not atomic: a reader racing the
    write may see part of it (a call is never abandoned midway, see :mod:`actors.tools.files`).
    Nothing is created next to the file: its directory is not part of the grant."""
    dir_fd = _parent_fd(path, make=False)
    try:
        fd = _open_checked(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{path} is not a regular file")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def remove_file(path: Path) -> int:
    """Remove the regular file at the checked ``path``; its size."""
    dir_fd = _parent_fd(path, make=False)
    try:
        current = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(current.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
        if stat.S_ISLNK(current.st_mode):
            raise _became_link(path)
        os.unlink(path.name, dir_fd=dir_fd)
        return current.st_size
    finally:
        os.close(dir_fd)
