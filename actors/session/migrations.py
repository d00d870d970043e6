"""Session formats: the current version, and one migration step per older one.

A session file's header says which format its lines are in. Reading an older file runs each
line through the steps from its version to :data:`SESSION_VERSION` (in memory: the file is
never rewritten); a file newer than this program is refused with both versions named, since
guessing at fields it does not know would lose or misread them.

Each format change bumps :data:`SESSION_VERSION`, adds the step from the previous version to
:data:`STEPS`, and adds a fixture written in the previous version
(``tests/fixtures/sessions/v<N>.jsonl``), which a spec loads through every step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SESSION_VERSION", "STEPS", "SessionTooNew", "migrate"]

SESSION_VERSION = 2
"""The format this program writes. Version 1 is the first that holds ``mode_change``;
version 2 added ``input_tokens`` to runs and replies."""

Step = Callable[[dict[str, Any]], dict[str, Any]]

_ANSWERS = frozenset({"session_run", "session_assistant_reply"})


def _v1_to_v2(line: dict[str, Any]) -> dict[str, Any]:
    """Runs and replies say what their last call's input tokens were; format 1 did not
    record them, so they are unknown."""
    if line.get("kind") in _ANSWERS:
        return {**line, "input_tokens": None}
    return line


STEPS: dict[int, Step] = {1: _v1_to_v2}
"""``STEPS[v]`` turns one line of format ``v`` into format ``v + 1``."""


class SessionTooNew(ValueError):
    """A session written by a newer program: its format is past :data:`SESSION_VERSION`."""

    def __init__(self, where: str, version: int) -> None:
        super().__init__(
            f"{where} is in session format {version}, written by a newer Conclave; this "
            f"Conclave reads formats up to {SESSION_VERSION}: upgrade Conclave to resume it"
        )
        self.version = version


def migrate(line: dict[str, Any], version: int) -> dict[str, Any]:
    """``line`` (one decoded JSON object) of format ``version``, in the current format."""
    for step in range(version, SESSION_VERSION):
        line = STEPS[step](line)
    return line
