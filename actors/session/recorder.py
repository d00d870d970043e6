"""What a front end records in an open session: each turn, the run it launched, mode
changes, plans, compactions; and the conversation so far, kept up to date as it records.

One recorder per open session, used by one task at a time (a REPL's service, a headless
run). Every method appends synchronously (see :mod:`actors.session.store`), so a record is
never half made under cancellation.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.run.lineage import run_id
from conclave.actors.run.result import RunResult
from conclave.actors.session.entries import (
    AssistantReply,
    Compacted,
    ModeChanged,
    PlanDecided,
    PlanDecision,
    PlanProposed,
    RunRecorded,
    SessionEntry,
    UserTurn,
)
from conclave.actors.session.history import Conversation, ConversationFold
from conclave.actors.session.store import Session
from conclave.config.modes import ModeSource, ModeState

__all__ = ["LastCallTokens", "SessionRecorder"]

E = TypeVar("E", bound=SessionEntry)


class LastCallTokens:
    """An event-hub callback that keeps the input tokens of a run's last LLM call whose
    server reported usage (what automatic compaction compares with its threshold)."""

    kinds = (LlmRequestFinished,)

    def __init__(self) -> None:
        self.input_tokens: int | None = None

    def record(self, event: LlmRequestFinished) -> None:
        if event.usage_reported and event.input_tokens:
            self.input_tokens = event.input_tokens


class SessionRecorder:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._fold = ConversationFold()
        self._plans = 0
        for entry in session.entries:
            self._add(entry)

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def plan_versions(self) -> int:
        """How many plan versions the session holds (the next is this plus one)."""
        return self._plans

    @property
    def conversation(self) -> Conversation:
        return self._fold.result()

    def _append(self, entry: E) -> E:
        stored = self.session.append(entry)
        self._add(stored)
        return stored

    def _add(self, entry: SessionEntry) -> None:
        self._fold.add(entry)
        if isinstance(entry, PlanProposed):
            self._plans += 1

    def user_turn(self, text: str) -> UserTurn:
        return self._append(UserTurn(text=text))

    def run_ended(
        self, turn: UserTurn, result: RunResult, *, input_tokens: int | None
    ) -> RunRecorded:
        log_dir = result.log_dir
        return self._append(
            RunRecorded(
                turn_id=turn.id,
                run_id=run_id(Path(log_dir)) if log_dir is not None else "",
                log_dir=str(log_dir) if log_dir is not None else None,
                termination=result.termination,
                winner=result.winner,
                final_answer=result.final_answer,
                input_tokens=input_tokens,
            )
        )

    def reply(self, turn: UserTurn, text: str, *, input_tokens: int | None) -> AssistantReply:
        """A reply given without a run (the interactive agent's own answer)."""
        return self._append(AssistantReply(turn_id=turn.id, text=text, input_tokens=input_tokens))

    def mode(
        self, state: ModeState, source: ModeSource, *, always: bool = False
    ) -> ModeChanged | None:
        """Record ``state`` when it differs from the last one recorded (or none was), or
        ``always`` (a resumed session's restored modes: the log says they were put back)."""
        last = self._fold.mode
        if not always and last is not None and last.state == state:
            return None
        return self._append(ModeChanged.of(state, source))

    def plan(self, *, version: int, plan: str, run_id: str) -> PlanProposed:
        return self._append(PlanProposed(version=version, plan=plan, run_id=run_id))

    def plan_decided(
        self, *, version: int, decision: PlanDecision, feedback: str = ""
    ) -> PlanDecided:
        return self._append(PlanDecided(version=version, decision=decision, feedback=feedback))

    def compacted(self, entry: Compacted) -> Compacted:
        return self._append(entry)
