"""Sessions on disk: ``<root>/<id>/session.jsonl``, append-only, one entry per line.

Writing
    :func:`open_session` creates a session (``O_EXCL``: an id is never reused) or opens one
    to append to, and holds an exclusive ``flock`` on its file while open, so two programs
    never append to one session (the second is refused with :class:`SessionBusy`). Each
    :meth:`Session.append` is one ``write`` of one whole line to a file opened ``O_APPEND``:
    when it returns, the line is with the operating system, so a killed process (SIGKILL)
    loses nothing it appended. Appending is synchronous on purpose: it is one small local
    write (microseconds), and having no checkpoint makes it atomic under trio cancellation.
    Power loss may lose the last lines the operating system had not yet written; the line it
    cut off is skipped when read. Nothing written is ever rewritten: a file whose last line
    was cut off gets a newline before the next entry, so the cut line stays a line of its own
    (skipped and reported at each read) and the new entry is whole.

Reading
    :func:`read_session` decodes every line through the codec. A line that cannot be
    decoded (the last one cut off by a crash, or damage) is skipped and reported in
    :attr:`SessionLog.skipped`, never fatal: a session is the person's conversation, and
    every complete entry is worth more than a refusal. A file without a header line is not a
    session (:class:`SessionUnreadable`); one in a newer format is refused
    (:class:`~actors.session.migrations.SessionTooNew`); an older one is migrated in memory.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import attrs
import orjson

from conclave.actors.session.entries import FormatUpgraded, SessionEntry, SessionHeader
from conclave.actors.session.migrations import SESSION_VERSION, SessionTooNew, migrate
from conclave.runtime.codec import DecodeError, decode, encode, json_line
from conclave.runtime.messages import find_message_class

__all__ = [
    "SESSIONS_DIR",
    "SESSION_FILE",
    "Session",
    "SessionBusy",
    "SessionError",
    "SessionLog",
    "SessionNotFound",
    "SessionUnreadable",
    "SkippedLine",
    "find_session",
    "new_session_id",
    "open_session",
    "read_session",
    "session_path",
]

SESSIONS_DIR = Path(".conclave") / "sessions"
"""Where a directory's sessions live, relative to it."""
SESSION_FILE = "session.jsonl"

_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$")

E = TypeVar("E", bound=SessionEntry)

_NO_RESUME = "; it cannot be resumed: remove its directory, or resume another session"
"""What to do about a file that holds no readable session (``conclave -c`` passes it over)."""


class SessionError(Exception):
    """A session cannot be opened or written; the message says which and what to do."""


class SessionNotFound(SessionError):
    pass


class SessionBusy(SessionError):
    pass


class SessionUnreadable(SessionError):
    pass


@attrs.frozen(kw_only=True)
class SkippedLine:
    """A line that held no readable entry."""

    line: int
    """1-based."""
    reason: str
    cut_off: bool
    """The file's last line, without its newline: an interrupted write."""

    def describe(self) -> str:
        if self.cut_off:
            return f"line {self.line} was cut off (an interrupted write) and is skipped"
        return f"line {self.line} is skipped: {self.reason}"


@attrs.frozen(kw_only=True)
class SessionLog:
    """A session as read: its header, every readable entry in order, and what was skipped."""

    path: Path
    header: SessionHeader
    entries: tuple[SessionEntry, ...]
    """Every entry after the header (format markers left out), in the current format."""
    skipped: tuple[SkippedLine, ...] = ()

    @property
    def id(self) -> str:
        return self.header.session_id

    @property
    def last_id(self) -> int:
        return self.entries[-1].id if self.entries else self.header.id

    def problems(self) -> str | None:
        """One line about the skipped lines, or ``None`` when there were none."""
        if not self.skipped:
            return None
        described = "; ".join(s.describe() for s in self.skipped[:3])
        more = f" (and {len(self.skipped) - 3} more)" if len(self.skipped) > 3 else ""
        return f"session {self.id}: {described}{more}"


def new_session_id(now: float) -> str:
    """``20261127-103501-a1b2c3``: sorts by creation time, unique by its random tail."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{secrets.token_hex(3)}"


def session_path(root: Path, session_id: str) -> Path:
    return root / session_id / SESSION_FILE


def find_session(root: Path, wanted: str) -> str:
    """The id of the session ``wanted`` names: its id, or a prefix of only one id."""
    if not _ID.match(wanted):
        raise SessionNotFound(
            f"{wanted!r} is not a session id; `conclave sessions` lists this directory's"
        )
    if session_path(root, wanted).is_file():
        return wanted
    try:
        names = sorted(p.name for p in root.iterdir() if p.name.startswith(wanted))
    except OSError:
        names = []
    matches = [n for n in names if session_path(root, n).is_file()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionNotFound(
            f"no session {wanted!r} in {root}; `conclave sessions` lists this directory's"
        )
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise SessionNotFound(f"{wanted!r} names {len(matches)} sessions ({shown}); give more of it")


def read_session(path: Path) -> SessionLog:
    """The session in ``path``; see the module docstring for what is skipped and refused."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionNotFound(f"no session file {path}") from None
    except OSError as exc:
        raise SessionUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    return _parse(path, data)


def _parse(path: Path, data: bytes) -> SessionLog:
    lines = data.split(b"\n")
    cut = lines.pop()  # b"" when the file ends with its newline
    if cut:
        lines.append(cut)
    header: SessionHeader | None = None
    version = SESSION_VERSION
    entries: list[SessionEntry] = []
    skipped: list[SkippedLine] = []
    for number, raw in enumerate(lines, start=1):
        is_cut = bool(cut) and number == len(lines)
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            skipped.append(SkippedLine(line=number, reason=f"not JSON ({exc})", cut_off=is_cut))
            continue
        if header is None:
            header = _header(path, obj, number)
            version = header.version
            continue
        if isinstance(obj, dict) and obj.get("kind") == FormatUpgraded.kind:
            version = _version(path, obj.get("version"), number)
            continue
        entry = _entry(obj, version)
        if isinstance(entry, str):
            skipped.append(SkippedLine(line=number, reason=entry, cut_off=is_cut))
        else:
            entries.append(entry)
    if header is None:
        if skipped:
            raise SessionUnreadable(
                f"{path} is not a session: its first line is no session header "
                f"({skipped[0].reason}){_NO_RESUME}"
            )
        raise SessionUnreadable(f"{path} is empty: the session was never written{_NO_RESUME}")
    return SessionLog(path=path, header=header, entries=tuple(entries), skipped=tuple(skipped))


def _header(path: Path, obj: Any, number: int) -> SessionHeader:
    if not isinstance(obj, dict) or obj.get("kind") != SessionHeader.kind:
        raise SessionUnreadable(
            f"{path} is not a session: line {number} should be its session_header{_NO_RESUME}"
        )
    version = _version(path, obj.get("version"), number)
    try:
        header = decode(migrate(obj, version), SessionHeader)
    except DecodeError as exc:
        raise SessionUnreadable(f"{path}: its header cannot be read: {exc}{_NO_RESUME}") from None
    return attrs.evolve(header, version=version)


def _version(path: Path, version: Any, number: int) -> int:
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SessionUnreadable(
            f"{path}: line {number} names session format {version!r}; expected a whole number "
            f"from 1 to {SESSION_VERSION}{_NO_RESUME}"
        )
    if version > SESSION_VERSION:
        raise SessionTooNew(str(path), version)
    return version


def _entry(obj: Any, version: int) -> SessionEntry | str:
    """The entry, or why the line holds none."""
    if not isinstance(obj, dict):
        return "not an entry (a JSON object with a kind)"
    kind = obj.get("kind")
    if not isinstance(kind, str) or find_message_class(kind) is None:
        return f"unknown entry kind {kind!r}"
    try:
        return decode(migrate(obj, version), SessionEntry)
    except (DecodeError, KeyError, TypeError) as exc:
        return f"not a valid {kind} entry ({exc})"


class Session:
    """An open session: what it held when opened, and appending to it. Build it with
    :func:`open_session`."""

    def __init__(
        self, *, log: SessionLog, fd: int, clock: Callable[[], float], resumed: bool
    ) -> None:
        self.path = log.path
        self.header = log.header
        self.entries: list[SessionEntry] = list(log.entries)
        """Every entry, the appended ones included, oldest first."""
        self.skipped = log.skipped
        self.resumed = resumed
        """Opened to go on with (``False``: created now)."""
        self._fd: int | None = fd
        self._clock = clock
        self._next_id = log.last_id + 1

    @property
    def id(self) -> str:
        return self.header.session_id

    def append(self, entry: E) -> E:
        """Write ``entry`` as the next line, numbered and timestamped; returns it as written.
        One ``write`` syscall, no checkpoint: atomic under cancellation. Raises
        :class:`SessionError` when the write fails (the entry is then not in the session)."""
        stored = attrs.evolve(entry, id=self._next_id, at=self._clock())
        self._write(json_line(encode(stored)))
        self._next_id += 1
        self.entries.append(stored)
        return stored

    def log(self) -> SessionLog:
        """The session as it is now, as :func:`read_session` would read it."""
        return SessionLog(
            path=self.path, header=self.header, entries=tuple(self.entries), skipped=self.skipped
        )

    def _write(self, line: bytes) -> None:
        if self._fd is None:
            raise SessionError(f"session {self.id} is closed")
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            raise SessionError(
                f"cannot append to session {self.id} ({self.path}): {exc.strerror or exc}"
            ) from None

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def open_session(
    root: Path,
    session_id: str | None = None,
    *,
    cwd: Path | None = None,
    clock: Callable[[], float] = time.time,
) -> Iterator[Session]:
    """A new session under ``root`` (``session_id`` ``None``), or the existing one named
    ``session_id`` to append to; closed (and unlocked) on leaving. ``cwd`` is recorded in a
    new session's header (default: the current directory).

    Raises :class:`SessionNotFound`, :class:`SessionBusy` (another program has it open),
    :class:`SessionUnreadable`, :class:`~actors.session.migrations.SessionTooNew`, or
    :class:`SessionError` when the directory cannot be written."""
    session = _create(root, cwd, clock) if session_id is None else _reopen(root, session_id, clock)
    try:
        yield session
    finally:
        session.close()


def _create(root: Path, cwd: Path | None, clock: Callable[[], float]) -> Session:
    now = clock()
    session_id = new_session_id(now)
    path = session_path(root, session_id)
    try:
        path.parent.mkdir(parents=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise SessionError(
            f"cannot create a session in {root}: {exc.strerror or exc}; "
            "check that the directory is writable"
        ) from None
    _lock(fd, path, session_id)
    header = SessionHeader(
        id=0, at=now, version=SESSION_VERSION, session_id=session_id, cwd=str(cwd or Path.cwd())
    )
    session = Session(
        log=SessionLog(path=path, header=header, entries=()), fd=fd, clock=clock, resumed=False
    )
    try:
        session._write(json_line(encode(header)))
    except SessionError:
        session.close()
        # No header, no session: an empty file would be the latest one `--continue` finds.
        shutil.rmtree(path.parent, ignore_errors=True)
        raise
    return session


def _reopen(root: Path, session_id: str, clock: Callable[[], float]) -> Session:
    path = session_path(root, session_id)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SessionNotFound(
            f"no session {session_id!r} in {root}; `conclave sessions` lists this directory's"
        ) from None
    except OSError as exc:
        raise SessionError(f"cannot open session {session_id}: {exc.strerror or exc}") from None
    try:
        _lock(fd, path, session_id)
        log = read_session(path)
        session = Session(log=log, fd=fd, clock=clock, resumed=True)
        if _ends_cut(fd):
            session._write(b"\n")  # the cut line stays its own line; the next entry is whole
        if log.header.version < SESSION_VERSION:
            # A marker, not an entry of the conversation: it takes no id.
            session._write(json_line(encode(FormatUpgraded(at=clock(), version=SESSION_VERSION))))
    except BaseException:
        os.close(fd)
        raise
    return session


def _lock(fd: int, path: Path, session_id: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionBusy(
                f"session {session_id} is open in another Conclave; quit that one first, "
                "or start a new session"
            ) from None
        raise SessionError(f"cannot lock {path}: {exc.strerror or exc}") from None


def _ends_cut(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
