"""A session's entries read back as a conversation: its exchanges, its mode state, and the
history a run's agents are shown.

The history is what :class:`~actors.run.spec.RunSpec` carries: earlier turns as real user
and assistant messages (the prompts module renders them, so content can never forge prompt
structure). After a compaction it begins with the summary, as the answer to
:data:`SUMMARY_QUESTION`, followed by the exchanges from ``first_kept_id`` on, verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from conclave.actors.run.turn import Turn
from conclave.actors.session.entries import (
    AssistantReply,
    Compacted,
    ModeChanged,
    RunRecorded,
    SessionEntry,
    UserTurn,
)

__all__ = ["SUMMARY_QUESTION", "Conversation", "Exchange", "read_conversation"]

SUMMARY_QUESTION = "Summarise our conversation so far."
"""The user message a compaction's summary answers in the history."""


@attrs.frozen(kw_only=True)
class Exchange:
    """What the person typed and what answered it (a run, or a reply), if anything did."""

    user: UserTurn
    run: RunRecorded | None = None
    reply: AssistantReply | None = None

    @property
    def answer(self) -> str | None:
        if self.reply is not None:
            return self.reply.text
        return self.run.final_answer if self.run is not None else None

    def turn(self) -> Turn | None:
        """The exchange as history, or ``None`` when nothing answered it."""
        answer = self.answer
        if answer is None:
            return None
        run = self.run
        return Turn(
            task=self.user.text,
            final_answer=answer,
            winner=run.winner if run is not None else None,
            run_id=run.run_id if run is not None else "",
        )


@attrs.frozen(kw_only=True)
class Conversation:
    exchanges: tuple[Exchange, ...]
    """Every exchange, oldest first (those a compaction summarised included)."""
    mode: ModeChanged | None
    """The last mode change: the mode state to restore."""
    compaction: Compacted | None
    """The latest compaction, if any."""
    last_input_tokens: int | None = None
    """What the last run's (or reply's) last LLM call reported as its input tokens: what
    automatic compaction compares with its threshold. ``None``: not reported, or no call."""

    def kept(self) -> tuple[Exchange, ...]:
        """The exchanges the history holds verbatim: after the latest compaction's cut."""
        if self.compaction is None:
            return self.exchanges
        first = self.compaction.first_kept_id
        return tuple(e for e in self.exchanges if e.user.id >= first)

    def history(self) -> tuple[Turn, ...]:
        """What the next run's agents are shown, oldest first."""
        turns: list[Turn] = []
        if self.compaction is not None:
            turns.append(Turn(task=SUMMARY_QUESTION, final_answer=self.compaction.summary))
        turns += (turn for e in self.kept() if (turn := e.turn()) is not None)
        return tuple(turns)


def read_conversation(entries: Iterable[SessionEntry]) -> Conversation:
    """Fold ``entries`` (in order) into a :class:`Conversation`."""
    exchanges: list[Exchange] = []
    by_id: dict[int, int] = {}
    mode: ModeChanged | None = None
    compaction: Compacted | None = None
    last_tokens: int | None = None
    for entry in entries:
        if isinstance(entry, UserTurn):
            by_id[entry.id] = len(exchanges)
            exchanges.append(Exchange(user=entry))
        elif isinstance(entry, RunRecorded | AssistantReply):
            index = by_id.get(entry.turn_id)
            if index is None:
                continue  # its turn was on a line that was skipped
            last_tokens = entry.input_tokens
            if isinstance(entry, RunRecorded):
                exchanges[index] = attrs.evolve(exchanges[index], run=entry)
            else:
                exchanges[index] = attrs.evolve(exchanges[index], reply=entry)
        elif isinstance(entry, ModeChanged):
            mode = entry
        elif isinstance(entry, Compacted):
            compaction = entry
            last_tokens = None  # the next call's prompt is the compacted one
    return Conversation(
        exchanges=tuple(exchanges),
        mode=mode,
        compaction=compaction,
        last_input_tokens=last_tokens,
    )
