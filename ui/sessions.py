"""Sessions at the command line, for every front end that has them (the REPL, ``conclave
run``): the ``--continue``/``--resume`` flags, which session they name, pruning old ones,
and the one-line notice of what a resumed session restored.

Sessions stay local: this directory's live in ``.conclave/sessions`` (:data:`SESSIONS_DIR`).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import attrs

from conclave.actors.session.catalogue import latest_session, prune_sessions
from conclave.actors.session.history import Conversation, read_conversation
from conclave.actors.session.migrations import SessionTooNew
from conclave.actors.session.recorder import SessionRecorder
from conclave.actors.session.store import (
    SESSIONS_DIR,
    SessionError,
    find_session,
    open_session,
    read_session,
    session_path,
)
from conclave.config.modes import AgentMode, ModeState
from conclave.config.schema import ConclaveConfig
from conclave.config.wording import plural
from conclave.ui.session_flags import PICK

__all__ = [
    "age",
    "chosen_session",
    "describe_modes",
    "open_chosen_session",
    "prune_old_sessions",
    "restored_modes",
    "restored_notice",
    "resumed_conversation",
    "sessions_root",
]


def sessions_root() -> Path:
    """This directory's sessions."""
    return SESSIONS_DIR


def chosen_session(root: Path, args: argparse.Namespace) -> str | None:
    """The id of the session the flags name, :data:`PICK` for a picker, or ``None`` for a
    new session. Raises :class:`SessionError` naming what to do when there is none."""
    resume: str | None = getattr(args, "resume", None)
    if getattr(args, "continue_session", False):
        latest = latest_session(root)
        if latest is None:
            raise SessionError(
                "--continue: this directory has no session yet; start one without --continue"
            )
        return latest
    if resume is None or resume == PICK:
        return resume
    return find_session(root, resume)


def prune_old_sessions(root: Path, config: ConclaveConfig) -> list[str]:
    """Remove the sessions past ``sessions.retention_days``; returns their ids."""
    days = config.sessions.retention_days
    if days is None:
        return []
    return prune_sessions(root, retention_days=days, now=time.time())


def describe_modes(state: ModeState) -> str:
    """``plan mode, single agent (b), refinement off``: the mode state in a phrase."""
    parts = [f"{state.collaboration.value} mode"]
    if state.agent_mode is AgentMode.SINGLE:
        agent = f" ({state.active_agent})" if state.active_agent else ""
        parts.append(f"single agent{agent}")
    else:
        parts.append("multi-agent")
    parts.append(f"refinement {'on' if state.refinement else 'off'}")
    return ", ".join(parts)


def restored_notice(
    session_id: str, conversation: Conversation, modes: ModeState | None = None
) -> str:
    """One line: which session was resumed, how much of it, the mode it restored, and the
    ``modes`` made of it (by flags given, or an agent no longer configured) when they differ."""
    turns = plural(len(conversation.exchanges), "turn")
    compacted = " (older turns summarised)" if conversation.compaction is not None else ""
    mode = conversation.mode
    restored = f"; restored {describe_modes(mode.state)}" if mode is not None else ""
    if mode is not None and modes is not None and modes != mode.state:
        restored += f"; now {describe_modes(modes)}"
    return f"resumed session {session_id}: {turns}{compacted}{restored}"


def resumed_conversation(root: Path, chosen: str | None) -> Conversation | None:
    """The conversation of the session ``chosen`` names, read before it is opened (its modes
    decide the run's config); ``None`` for a new session, or one that cannot be read
    (opening it then says why)."""
    if chosen is None or chosen == PICK:
        return None
    try:
        log = read_session(session_path(root, chosen))
    except (SessionError, ValueError):
        return None
    return read_conversation(log.entries)


def restored_modes(
    conversation: Conversation, agents: Collection[str], *, warn: Callable[[str], None]
) -> ModeState | None:
    """The mode state a resumed session left off in (``None``: it recorded none). An active
    agent the config no longer has is dropped for multi-agent mode, saying so."""
    change = conversation.mode
    if change is None:
        return None
    modes = change.state
    if modes.active_agent is not None and modes.active_agent not in agents:
        warn(f"agent {modes.active_agent!r} is no longer configured: multi-agent mode")
        modes = attrs.evolve(modes, agent_mode=AgentMode.MULTI, active_agent=None)
    return modes


def age(seconds: float) -> str:
    """``just now``, ``5m ago``, ``3h ago``, ``2d ago``."""
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


@contextlib.contextmanager
def open_chosen_session(
    root: Path, chosen: str | None, *, warn: Callable[[str], None]
) -> Iterator[SessionRecorder | None]:
    """The session ``chosen`` names (resumed), or a new one (``None``). A resumed session
    that cannot be opened raises :class:`SessionError` (the person asked for it); a new one
    that cannot be created is ``None`` after a warning (the turn still runs, unrecorded).
    Lines a resumed session skipped are warned about."""
    with contextlib.ExitStack() as stack:
        try:
            session = stack.enter_context(open_session(root, chosen))
        except SessionTooNew as exc:
            raise SessionError(str(exc)) from None
        except SessionError as exc:
            if chosen is not None:
                raise
            warn(f"this conversation is not saved as a session: {exc}")
            yield None
            return
        problems = session.log().problems()
        if problems is not None:
            warn(problems)
        yield SessionRecorder(session)
