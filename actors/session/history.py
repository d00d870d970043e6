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

__all__ = [
    "SUMMARY_QUESTION",
    "Conversation",
    "ConversationFold",
    "Exchange",
    "read_conversation",
]

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


class ConversationFold:
    """Builds a :class:`Conversation` one entry at a time, so a recorder keeps it up to date
    at the cost of the entry it appends, not of the whole session."""

    def __init__(self) -> None:
        self._exchanges: list[Exchange] = []
        self._by_id: dict[int, int] = {}
        self._mode: ModeChanged | None = None
        self._compaction: Compacted | None = None
        self._last_tokens: int | None = None

    def add(self, entry: SessionEntry) -> None:
        if isinstance(entry, UserTurn):
            self._by_id[entry.id] = len(self._exchanges)
            self._exchanges.append(Exchange(user=entry))
        elif isinstance(entry, RunRecorded | AssistantReply):
            index = self._by_id.get(entry.turn_id)
            if index is None:
                return  # its turn was on a line that was skipped
            self._last_tokens = entry.input_tokens
            exchange = self._exchanges[index]
            if isinstance(entry, RunRecorded):
                self._exchanges[index] = attrs.evolve(exchange, run=entry)
            else:
                self._exchanges[index] = attrs.evolve(exchange, reply=entry)
        elif isinstance(entry, ModeChanged):
            self._mode = entry
        elif isinstance(entry, Compacted):
            self._compaction = entry
            self._last_tokens = None  # the next call's prompt is the compacted one

    @property
    def mode(self) -> ModeChanged | None:
        return self._mode

    def result(self) -> Conversation:
        return Conversation(
            exchanges=tuple(self._exchanges),
            mode=self._mode,
            compaction=self._compaction,
            last_input_tokens=self._last_tokens,
        )


def read_conversation(entries: Iterable[SessionEntry]) -> Conversation:
    """Fold ``entries`` (in order) into a :class:`Conversation`."""
    fold = ConversationFold()
    for entry in entries:
        fold.add(entry)
    return fold.result()
