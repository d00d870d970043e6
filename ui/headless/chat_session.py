"""``conclave chat``'s session: each turn recorded as the REPL records the interactive
agent's (the message, each run it launched, its reply), so ``conclave chat -c`` and the REPL's
``conclave -c`` go on with the same conversation.

A session that cannot be written is said once on stderr, and the chat goes on unrecorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from conclave.actors.run.result import RunResult
from conclave.actors.run.turn import Turn
from conclave.actors.session.entries import UserTurn
from conclave.actors.session.recorder import SessionRecorder
from conclave.actors.session.store import SessionError

__all__ = ["ChatSession"]

T = TypeVar("T")


class ChatSession:
    def __init__(self, recorder: SessionRecorder | None, *, warn: Callable[[str], None]) -> None:
        self.recorder = recorder
        self._warn = warn
        self._turn: UserTurn | None = None

    @property
    def id(self) -> str | None:
        return self.recorder.id if self.recorder is not None else None

    def history(self) -> tuple[Turn, ...]:
        """The conversation so far (compactions applied): what the agent goes on from."""
        return self.recorder.conversation.history() if self.recorder is not None else ()

    def turn_started(self, text: str) -> None:
        recorder = self.recorder
        self._turn = self._guard(lambda: recorder.user_turn(text)) if recorder else None

    def run_ended(self, result: RunResult) -> None:
        recorder, turn = self.recorder, self._turn
        if recorder is not None and turn is not None:
            self._guard(lambda: recorder.run_ended(turn, result, input_tokens=None))

    def replied(self, text: str, *, input_tokens: int | None) -> None:
        recorder, turn = self.recorder, self._turn
        if recorder is not None and turn is not None:
            self._guard(lambda: recorder.reply(turn, text, input_tokens=input_tokens))
        self._turn = None

    def _guard(self, record: Callable[[], T]) -> T | None:
        try:
            return record()
        except SessionError as exc:
            self._warn(f"{exc}; this conversation is no longer saved")
            self.recorder = None
            return None
