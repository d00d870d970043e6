"""The REPL's session commands, ``/resume [ID]`` and ``/compact [INSTRUCTIONS]``, and how a
session starts (:class:`SessionStart`). Light on purpose: loaded before the runtime; what
they start runs in :mod:`ui.repl.sessions`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from conclave.config.modes import ModeSource
from conclave.config.resolver import RunFlags
from conclave.ui.repl.protocol import Compact, Resume
from conclave.ui.repl.state import Dialog, SessionChoice

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = ["SessionStart", "compact_command", "resume_command", "session_choices"]


@attrs.frozen(kw_only=True)
class SessionStart:
    """How the REPL's session begins."""

    root: Path
    """This directory's sessions."""
    resume: str | None = None
    """A session's id to go on with, ``""`` for the picker, ``None`` for a new session."""
    source: ModeSource = ModeSource.FLAG
    """Who set the modes the bar starts with (flags, or the config's ``mode:``)."""
    flags: RunFlags = attrs.field(factory=RunFlags)
    """The flags the REPL started with: each mode flag given (``--mode``, ``--agent-mode``
    with ``--agent``, ``--refinement``) wins over its part of a resumed session's modes."""


def resume_command(repl: Repl, argument: str) -> None:
    """``/resume ID`` goes on with that session; ``/resume`` alone opens the picker."""
    if argument:
        repl.send(Resume(session_id=argument))
        return
    start = repl.session_start
    if start is None:
        repl.error("this REPL keeps no session")
        return
    choices = session_choices(start.root, current=repl.state.session_id)
    if not choices:
        repl.say("no other session in this directory to resume")
        return
    repl.state.session_choices = choices
    repl.open_dialog(Dialog.SESSIONS)


def compact_command(repl: Repl, argument: str) -> None:
    """``/compact [INSTRUCTIONS]``: summarise the older exchanges, focused as asked."""
    repl.send(Compact(instructions=argument))


def session_choices(root: Path, *, current: str | None) -> tuple[SessionChoice, ...]:
    """The picker's rows: every other session, most recently used first, as first prompt,
    age and turns."""
    from conclave.actors.session.catalogue import list_sessions  # with the codec: not at start-up
    from conclave.ui.sessions import age

    now = time.time()
    return tuple(
        SessionChoice(
            id=s.id,
            name=" ".join(s.first_prompt.split())[:70] or "(no prompt yet)",
            detail=f"{age(now - s.updated_at)}, {s.turns} turn{'' if s.turns == 1 else 's'}",
        )
        for s in list_sessions(root)
        if s.id != current and (s.problem is None or s.turns)
    )
