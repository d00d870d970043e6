"""Resuming a paused run: the asking agent's transcript rebuilt from the run's files.

A run pauses when an agent asks a question nobody can answer then (``--on-question pause``).
Everything needed to go on is on disk already: the event log names the question and the call
that asked it (``QuestionAsked``), and ``transcripts.jsonl`` holds every message the agent's
round had exchanged before it. :func:`resume_point` puts that transcript together again and
ends it with the asking call and the user's answer, as a direct answer would have; the
resumed run's agent starts its first round from it instead of a fresh prompt, so nothing the
agent did before the question (its tool calls included) is done again.

What is rebuilt is one agent's round: a single-agent run paused before coordination had any
answer. A run paused later (answers given, a presentation) would need the coordination state
too; :func:`resume_point` refuses it, saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from conclave.actors.agent.transcript_log import TRANSCRIPTS, TranscriptError, read_transcripts
from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.human.desk import question_number
from conclave.actors.human.events import QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import (
    ASK_USER,
    Question,
    Reply,
    ReplySource,
    question_json,
    reply_text,
)
from conclave.actors.llm.protocol import CallPurpose, ChatMessage, ToolCall
from conclave.runtime.eventlog import read_event_log

__all__ = ["ResumeError", "ResumePoint", "resume_point"]

EVENTS = "events.jsonl"


class ResumeError(Exception):
    """The run cannot be resumed; the message says why and what to do."""


@attrs.frozen(kw_only=True)
class ResumePoint:
    agent: str
    messages: tuple[ChatMessage, ...]
    """The round's transcript, ending with the question and its answer."""
    prompt_length: int
    """How many of its first messages are the round's prompt."""
    question_id: str
    answer: str
    last_question: int
    """The highest question number in the paused run's log: the resumed run numbers its
    own after it, so question ids stay distinct along a chain of pauses and resumes."""


def resume_point(log_dir: Path, answer: str) -> ResumePoint:
    """Where the paused run in ``log_dir`` goes on, once ``answer`` is given."""
    asked, count = _pending(log_dir)
    lines = _agent_lines(log_dir, asked.agent)
    rounds = [line for line in lines if line["purpose"] == CallPurpose.ROUND.value]
    if len(rounds) != len(lines) or not rounds:
        raise ResumeError(
            f"{log_dir}: {asked.agent} asked during its presentation; only a run paused in "
            "its single agent's first round can be resumed yet: run the task again"
        )
    last = max(line["round"] for line in rounds)
    messages = [_message(line) for line in rounds if line["round"] == last]
    prompt_length = next(
        (i for i, m in enumerate(messages) if m.role == "assistant"), len(messages)
    )
    messages += _answered(asked, answer)
    return ResumePoint(
        agent=asked.agent,
        messages=tuple(messages),
        prompt_length=prompt_length,
        question_id=asked.question_id,
        answer=answer,
        last_question=count,
    )


def _pending(log_dir: Path) -> tuple[QuestionAsked, int]:
    """The question the run waits on, and the highest question number in the log."""
    path = log_dir / EVENTS
    if not path.is_file():
        raise ResumeError(f"{log_dir}: no {EVENTS} here: give the log directory of a paused run")
    events = read_event_log(path).events
    waiting: dict[str, QuestionAsked] = {}
    highest = 0
    for event in events:
        if isinstance(event, QuestionAsked):
            waiting[event.question_id] = event
            highest = max(highest, question_number(event.question_id))
        elif isinstance(event, QuestionAnswered):
            waiting.pop(event.question_id, None)
    pending = list(waiting.values())
    if not pending:
        raise ResumeError(
            f"{log_dir}: the run waits on no question (it did not pause, or was resumed "
            "already): nothing to answer"
        )
    if any(isinstance(e, AnswerAdded) for e in events):
        raise ResumeError(
            f"{log_dir}: the run paused after coordination had answers; only a run paused "
            "in its single agent's first round can be resumed yet: run the task again"
        )
    return pending[-1], highest


def _agent_lines(log_dir: Path, agent: str) -> list[dict[str, Any]]:
    path = log_dir / TRANSCRIPTS
    if not path.is_file():
        raise ResumeError(f"{log_dir}: no {TRANSCRIPTS}: the agent's transcript is needed")
    try:
        return [line for line in read_transcripts(path) if line["agent"] == agent]
    except TranscriptError as exc:
        raise ResumeError(f"the transcript cannot be read: {exc}") from None


def _message(line: dict[str, Any]) -> ChatMessage:
    """A transcript line as the message it records (see :mod:`actors.agent.transcript_log`)."""
    return ChatMessage(
        role=line["role"],
        content=line.get("content") or "",
        tool_calls=tuple(
            ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
            for c in line.get("tool_calls") or ()
        ),
        tool_call_id=line.get("tool_call_id"),
        provider_state=line.get("provider_state"),
    )


def _answered(asked: QuestionAsked, answer: str) -> list[ChatMessage]:
    """The asking reply and its answer, as the round would have had them."""
    question = Question(
        question=asked.question,
        context=asked.context,
        severity=asked.severity,
        options=asked.options,
        default=asked.default,
    )
    text = reply_text(Reply(value=answer, source=ReplySource.USER))
    if not asked.call_id:
        return [
            ChatMessage(role="assistant", content=question_json(question)),
            ChatMessage(role="user", content=text),
        ]
    call = ToolCall(id=asked.call_id, name=ASK_USER.name, arguments=question_json(question))
    return [
        ChatMessage(role="assistant", tool_calls=(call,)),
        ChatMessage(role="tool", content=text, tool_call_id=asked.call_id),
    ]
