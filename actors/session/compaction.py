"""Compaction: a session's older exchanges summarised into one entry, so the prompts of the
next runs stay small while the latest exchanges stay verbatim.

:func:`compact` asks a model for the summary (one call, purpose ``compact``; the scripted
backend answers it deterministically, :mod:`actors.llm.scripted_summary`) and appends one
:class:`~actors.session.entries.Compacted` entry ``{summary, first_kept_id, tokens_before,
tokens_after}``. Nothing is deleted: the history read back from then on is the summary
(as the answer to :data:`~actors.session.history.SUMMARY_QUESTION`) and the exchanges from
``first_kept_id`` on (:meth:`~actors.session.history.Conversation.history`). A compaction
cancelled before its summary arrived appends nothing: the session is as it was.

It is due (:func:`due`) when the last call's reported input tokens passed
``threshold_tokens``: that number is what the provider counted, so it includes the system
prompt and the task, which the history estimate does not.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from conclave.actors.llm.protocol import CallPurpose, ChatMessage, CompletionRequest, LLMBackend
from conclave.actors.llm.scripted_summary import FOCUS
from conclave.actors.run.turn import Turn
from conclave.actors.session.entries import Compacted, CompactionTrigger
from conclave.actors.session.history import SUMMARY_QUESTION, Conversation, Exchange
from conclave.actors.session.recorder import SessionRecorder

__all__ = [
    "CompactionFailed",
    "CompactionPolicy",
    "compact",
    "due",
    "estimate_tokens",
    "summary_request",
]

CHARS_PER_TOKEN = 4
"""The estimate's rate (the scripted backend reports usage at the same rate)."""

_SYSTEM = (
    "You summarise a conversation between a person and a panel of AI agents so that it can "
    "go on without its full text. Keep every decision, fact, name, file path, number and "
    "open question a later turn may need; drop pleasantries and repetition. Write plain "
    "prose or short bullets; do not address the person."
)
_REQUEST = "Summarise the conversation above for the agents that will continue it."


@attrs.frozen(kw_only=True)
class CompactionPolicy:
    """When compaction is due and what it keeps (the interactive mode's
    ``context_compaction`` settings have the same names)."""

    enabled: bool = True
    threshold_tokens: int = 100_000
    """Compact once the last call's reported input tokens pass this."""
    preserve_recent: int = 4
    """The latest exchanges kept verbatim."""


class CompactionFailed(Exception):
    """The model gave no summary; the session is unchanged."""


def estimate_tokens(turns: Sequence[Turn]) -> int:
    """Tokens the history ``turns`` adds to a prompt, estimated from its characters."""
    return sum(len(t.task) + len(t.final_answer) for t in turns) // CHARS_PER_TOKEN


def due(conversation: Conversation, policy: CompactionPolicy) -> bool:
    """Whether the last call's reported input tokens passed the threshold and there are
    exchanges older than the ones to keep."""
    tokens = conversation.last_input_tokens
    return (
        policy.enabled
        and tokens is not None
        and tokens > policy.threshold_tokens
        and _cut(conversation, policy.preserve_recent) is not None
    )


def summary_request(
    previous: str | None, exchanges: Sequence[Exchange], instructions: str = ""
) -> CompletionRequest:
    """The summary call: the earlier summary (if any) and the exchanges as the real user and
    assistant messages they were (quoted content never becomes prompt structure), then the
    request, with the person's focus."""
    messages = [ChatMessage(role="system", content=_SYSTEM)]
    if previous is not None:
        messages += (
            ChatMessage(role="user", content=SUMMARY_QUESTION),
            ChatMessage(role="assistant", content=previous),
        )
    for exchange in exchanges:
        turn = exchange.turn()
        if turn is not None:
            messages += (
                ChatMessage(role="user", content=turn.task),
                ChatMessage(role="assistant", content=turn.final_answer),
            )
    request = _REQUEST
    if instructions.strip():
        request += f"\n{FOCUS}{' '.join(instructions.split())}"
    messages.append(ChatMessage(role="user", content=request))
    return CompletionRequest(messages=tuple(messages), purpose=CallPurpose.COMPACT)


async def compact(
    recorder: SessionRecorder,
    backend: LLMBackend,
    *,
    preserve_recent: int,
    trigger: CompactionTrigger,
    instructions: str = "",
) -> Compacted | None:
    """Summarise every exchange but the ``preserve_recent`` latest into one appended entry;
    ``None`` when there is nothing older to summarise. Raises :class:`CompactionFailed`
    (or the backend's error) with the session unchanged."""
    conversation = recorder.conversation
    cut = _cut(conversation, preserve_recent)
    if cut is None:
        return None
    older, first_kept_id = cut
    previous = conversation.compaction.summary if conversation.compaction is not None else None
    completion = await backend.complete(summary_request(previous, older, instructions))
    summary = completion.message.content.strip()
    if not summary:
        raise CompactionFailed("the model returned an empty summary; nothing was compacted")
    kept = [t for e in conversation.kept() if e.user.id >= first_kept_id if (t := e.turn())]
    after = [Turn(task=SUMMARY_QUESTION, final_answer=summary), *kept]
    return recorder.compacted(
        Compacted(
            summary=summary,
            first_kept_id=first_kept_id,
            tokens_before=estimate_tokens(conversation.history()),
            tokens_after=estimate_tokens(after),
            trigger=trigger,
            instructions=instructions.strip(),
        )
    )


def _cut(conversation: Conversation, preserve_recent: int) -> tuple[list[Exchange], int] | None:
    """(the exchanges to summarise, the id of the first one kept), or ``None`` when no
    answered exchange is older than the ones to keep."""
    kept = list(conversation.kept())
    keep = kept[len(kept) - preserve_recent :] if preserve_recent > 0 else []
    older = kept[: len(kept) - len(keep)]
    if not any(e.answer is not None for e in older):
        return None
    first_kept_id = keep[0].user.id if keep else older[-1].user.id + 1
    return older, first_kept_id
