"""A directory's sessions: listed (newest first), the latest one, and pruning old ones.

Sessions stay local: each directory keeps its own under ``.conclave/sessions``, and
``sessions.retention_days`` bounds how long one is kept after its last entry.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import attrs

from conclave.actors.session.entries import RunRecorded, SessionEntry, UserTurn
from conclave.actors.session.migrations import SessionTooNew
from conclave.actors.session.store import (
    SESSION_FILE,
    SessionError,
    SessionLog,
    read_session,
    session_path,
)

__all__ = [
    "SessionSummary",
    "first_prompt",
    "latest_session",
    "list_sessions",
    "prune_sessions",
    "summarise",
]

DAY = 86_400.0


@attrs.frozen(kw_only=True)
class SessionSummary:
    """What a list or a picker shows of a session."""

    id: str
    path: Path
    created_at: float
    updated_at: float
    """When its last entry was written (the file's modification time)."""
    first_prompt: str
    turns: int
    """How many things the person typed (user turns)."""
    runs: int
    problem: str | None = None
    """Why it could not be read (then the counts are 0), or what was skipped."""

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "path": str(self.path),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "first_prompt": self.first_prompt,
            "turns": self.turns,
            "runs": self.runs,
            "problem": self.problem,
        }


def first_prompt(entries: tuple[SessionEntry, ...] | list[SessionEntry]) -> str:
    return next((e.text for e in entries if isinstance(e, UserTurn)), "")


def summarise(log: SessionLog, updated_at: float) -> SessionSummary:
    return SessionSummary(
        id=log.id,
        path=log.path,
        created_at=log.header.at,
        updated_at=updated_at,
        first_prompt=first_prompt(log.entries),
        turns=sum(isinstance(e, UserTurn) for e in log.entries),
        runs=sum(isinstance(e, RunRecorded) for e in log.entries),
        problem=log.problems(),
    )


def list_sessions(root: Path) -> list[SessionSummary]:
    """Every session under ``root``, most recently used first. One that cannot be read is
    listed with its problem, not left out: the person should see it is there."""
    found: list[SessionSummary] = []
    for path in _session_files(root):
        updated = path.stat().st_mtime
        try:
            found.append(summarise(read_session(path), updated))
        except (SessionError, ValueError) as exc:
            found.append(
                SessionSummary(
                    id=path.parent.name,
                    path=path,
                    created_at=updated,
                    updated_at=updated,
                    first_prompt="",
                    turns=0,
                    runs=0,
                    problem=str(exc),
                )
            )
    found.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
    return found


def latest_session(root: Path) -> str | None:
    """The id of the session under ``root`` written to last that can be resumed, or ``None``
    without any. One that holds no session (an empty file left by a crash as it was created,
    or damage) is passed over: it would refuse ``--continue`` until someone removed it, and
    ``conclave sessions`` still lists it with its problem. One in a newer format is not
    passed over: resuming it says to upgrade."""
    files = sorted(_session_files(root), key=lambda p: (p.stat().st_mtime, p.parent.name))
    for path in reversed(files):
        try:
            read_session(path)
        except SessionTooNew:
            return path.parent.name  # resuming it names both versions
        except (SessionError, ValueError):
            continue
        return path.parent.name
    return None


def prune_sessions(root: Path, *, retention_days: float, now: float) -> list[str]:
    """Remove the sessions whose last entry is older than ``retention_days``; returns their
    ids. A session open in a program (locked) is kept, however old."""
    removed: list[str] = []
    for path in _session_files(root):
        if now - path.stat().st_mtime <= retention_days * DAY or _in_use(path):
            continue
        shutil.rmtree(path.parent, ignore_errors=True)
        removed.append(path.parent.name)
    return sorted(removed)


def _session_files(root: Path) -> list[Path]:
    try:
        children = list(root.iterdir())
    except OSError:
        return []
    return [p / SESSION_FILE for p in children if session_path(root, p.name).is_file()]


def _in_use(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
