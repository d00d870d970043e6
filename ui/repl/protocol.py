"""What the UI asks of the service (:mod:`ui.repl.service`): the commands it sends through the
trio token. Light on purpose: the UI imports this before the runtime is loaded."""

from __future__ import annotations

import attrs

from conclave.config.modes import ModeState
from conclave.config.schema.permissions import PermissionMode

__all__ = [
    "Cancel",
    "ClearHistory",
    "Command",
    "Compact",
    "Continue",
    "Correct",
    "Override",
    "Quit",
    "Resume",
    "SetPermissionMode",
    "Submit",
]


@attrs.frozen(kw_only=True)
class Submit:
    """Run ``task`` as the next turn, with the modes as they were when it was sent."""

    task: str
    modes: ModeState
    """The collaboration mode included."""
    status: str = ""
    """What the screen calls the turn while it runs (default: by its mode)."""
    shown_task: str | None = None
    """What the transcript shows as the person's input (default: ``task``)."""
    typed: bool = False
    """Typed at the prompt (not made by a dialog): while a run with PAOR agents works, it is
    a correction for them, not the next turn (:meth:`ReplService.handle`)."""


@attrs.frozen(kw_only=True)
class Cancel:
    """Ctrl+C: end the running run now (its partial result is kept) and drop queued turns."""


@attrs.frozen(kw_only=True)
class Override:
    """Let ``agent`` present instead of the vote's winner."""

    agent: str


@attrs.frozen(kw_only=True)
class Continue:
    """Keep the vote's winner."""


@attrs.frozen(kw_only=True)
class ClearHistory:
    """``/clear``: the next turn starts a new conversation."""


@attrs.frozen(kw_only=True)
class Compact:
    """``/compact [instructions]``: summarise the session's older exchanges now."""

    instructions: str = ""


@attrs.frozen(kw_only=True)
class Resume:
    """Go on with session ``session_id`` (``/resume``'s picker, ``--resume``)."""

    session_id: str


@attrs.frozen(kw_only=True)
class Correct:
    """``/correct``: a correction for the running run's PAOR agents (``agent``, or all)."""

    text: str
    agent: str | None = None


@attrs.frozen(kw_only=True)
class SetPermissionMode:
    """``/permissions MODE``: the runs started from now on ask in ``mode``."""

    mode: PermissionMode


@attrs.frozen(kw_only=True)
class Quit:
    """Cancel any run, wait until its log is closed, and end the service."""


Command = (
    Submit
    | Cancel
    | Override
    | Continue
    | ClearHistory
    | Compact
    | Resume
    | Correct
    | SetPermissionMode
    | Quit
)
