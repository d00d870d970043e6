"""What a session remembers: one registered message type per kind of entry.

A session is a file of these, one per line, written by the project's one codec
(:mod:`runtime.codec`), so an entry is the same typed, frozen value in memory, on disk and
on the wire. Every entry has an ``id`` (its position among the session's entries, counted
from 1 after the header; the store assigns it) and ``at`` (seconds since the epoch, also
assigned by the store). A compaction names the first entry it kept by that id.

Kind tags start with ``session_`` and never change when classes move; a change to what an
entry holds is a new :data:`~actors.session.migrations.SESSION_VERSION` with a migration
step (:mod:`actors.session.migrations`).
"""

from __future__ import annotations

import enum

from conclave.actors.run.termination import Termination
from conclave.config.modes import ModeSource, ModeState
from conclave.config.schema.modes import AgentMode, CollaborationMode
from conclave.runtime.messages import Message, message

__all__ = [
    "AssistantReply",
    "Compacted",
    "CompactionTrigger",
    "FormatUpgraded",
    "ModeChanged",
    "PlanDecided",
    "PlanDecision",
    "PlanProposed",
    "RunRecorded",
    "SessionEntry",
    "SessionHeader",
    "UserTurn",
]


@message(kind="session_entry")
class SessionEntry(Message):
    """Base of every line of a session. ``id`` and ``at`` are the store's to set: an entry
    built without them gets them when it is appended. (Registered, as every message base
    is, so that type checkers see its fields on each subclass.)"""

    id: int = 0
    at: float = 0.0


@message(kind="session_header")
class SessionHeader(SessionEntry):
    """The first line: which format the lines after it are in, and where the session began."""

    version: int
    session_id: str
    cwd: str
    """The directory the session was started in (sessions are listed per directory)."""


@message(kind="session_format_upgraded")
class FormatUpgraded(SessionEntry):
    """Appended when a program that writes a newer format appends to an older session: the
    lines before it are migrated when read, the lines after it are already in ``version``.
    Nothing already written is ever rewritten."""

    version: int


@message(kind="session_user_turn")
class UserTurn(SessionEntry):
    """What the person typed (a task, a question)."""

    text: str


@message(kind="session_run")
class RunRecorded(SessionEntry):
    """The run a turn launched, once it ended."""

    turn_id: int
    """The :class:`UserTurn` it answered."""
    run_id: str
    log_dir: str | None
    """Where its ``events.jsonl`` is; ``None``: it kept no log."""
    termination: Termination
    winner: str | None
    final_answer: str | None
    input_tokens: int | None
    """The input tokens the run's last LLM call reported (automatic compaction compares
    them with its threshold); ``None`` when it reported none. Since format 2."""


@message(kind="session_assistant_reply")
class AssistantReply(SessionEntry):
    """A reply given without a run (the interactive agent answering itself)."""

    turn_id: int
    text: str
    input_tokens: int | None
    """The input tokens the call that wrote it reported; ``None`` when it reported none.
    Since format 2."""


@message(kind="session_mode_change")
class ModeChanged(SessionEntry):
    """The whole mode state after a change, and who made it."""

    collaboration: CollaborationMode
    agent_mode: AgentMode
    active_agent: str | None
    refinement: bool
    source: ModeSource

    @classmethod
    def of(cls, state: ModeState, source: ModeSource) -> ModeChanged:
        return cls(
            collaboration=state.collaboration,
            agent_mode=state.agent_mode,
            active_agent=state.active_agent,
            refinement=state.refinement,
            source=source,
        )

    @property
    def state(self) -> ModeState:
        return ModeState(
            collaboration=self.collaboration,
            agent_mode=self.agent_mode,
            active_agent=self.active_agent,
            refinement=self.refinement,
        )


@message(kind="session_plan_proposed")
class PlanProposed(SessionEntry):
    """A version of a plan (a planning run's answer, as JSON)."""

    version: int
    plan: str
    run_id: str


class PlanDecision(enum.Enum):
    APPROVED = "approved"
    REVISED = "revised"
    """Sent back with feedback: a new version follows."""
    CANCELLED = "cancelled"


@message(kind="session_plan_decided")
class PlanDecided(SessionEntry):
    """What the person decided about a plan version."""

    version: int
    decision: PlanDecision
    feedback: str = ""


class CompactionTrigger(enum.Enum):
    MANUAL = "manual"
    """``/compact``."""
    AUTOMATIC = "automatic"
    """The last call's input tokens passed the threshold."""


@message(kind="session_compaction")
class Compacted(SessionEntry):
    """Every exchange before ``first_kept_id``, summarised: history from here on is the
    summary, then the entries from ``first_kept_id`` on, verbatim."""

    summary: str
    first_kept_id: int
    tokens_before: int
    """Estimated tokens of the history before compaction."""
    tokens_after: int
    """Estimated tokens of the history after it (the summary and what was kept)."""
    trigger: CompactionTrigger
    instructions: str = ""
    """What ``/compact INSTRUCTIONS`` asked the summary to focus on."""
