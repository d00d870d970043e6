"""Resuming a paused run: the asking agent's transcript rebuilt from the run's files.

A run pauses when an agent asks a question nobody can answer then (``--on-question pause``).
Everything needed to go on is on disk already: the event log names the question and the call
that asked it (``QuestionAsked``), and ``transcripts.jsonl`` holds every message the agent's
round or presentation had exchanged before it. :func:`resume_point` puts that transcript
together again and ends it with the asking call and the user's answer, as a direct answer
would have; the resumed run's agent goes on from it instead of a fresh prompt, so nothing the
agent did before the question (its tool calls included) is done again.

Only the agents that may ask pause a run: a single agent (in any of its rounds) and the
presenter. So one agent's transcript is all that is rebuilt; what coordination had decided
before the question (the answers, the votes, the exclusions) is read from the event log as
its :data:`History` (from the logs of the runs it resumed as well, if it paused again after
a resume: :mod:`actors.run.lineage`), which the resumed run replays into its coordination state
(:mod:`actors.coordination.restore`): a presenter presents the same answers it was shown,
and a single agent's later round sees the answers it had given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.agent.transcript_log import TRANSCRIPTS, TranscriptError, read_transcripts
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    AnswerRepeated,
    RunStarted,
    VoteAdded,
)
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
from conclave.actors.run.lineage import EVENTS, LineageError, lineage
from conclave.runtime import Event
from conclave.runtime.eventlog import read_event_log

__all__ = ["History", "ResumeError", "ResumePoint", "resume_point"]

History = tuple[AnswerAdded | VoteAdded | AnswerRepeated | AgentExcluded, ...]
"""What coordination decided before the pause, in the order it was decided."""


class ResumeError(Exception):
    """The run cannot be resumed; the message says why and what to do."""


@attrs.frozen(kw_only=True)
class ResumePoint:
    agent: str
    purpose: CallPurpose
    """Whether it asked in a round or in its presentation."""
    round: int
    """The agent's round it asked in (a presentation's is that of its last round)."""
    messages: tuple[ChatMessage, ...]
    """The round's or presentation's transcript, ending with the question and its answer."""
    prompt_length: int
    """How many of its first messages are the prompt."""
    question_id: str
    answer: str
    last_question: int
    """The highest question number in the paused run's log: the resumed run numbers its
    own after it, so question ids stay distinct along a chain of pauses and resumes."""
    history: History = ()
    """The answers, votes and exclusions coordination had before the pause."""
    workdir: Path | None = None
    """The paused run's working directory (its log directory, resolved): the resumed run
    starts from copies of its workspaces and answer snapshots."""

    def moved_to(self, workdir: Path) -> tuple[ChatMessage, ...]:
        """The transcript as it reads once the paused run's working directory is copied to
        ``workdir``: every path under the old one (the prompt's workspace, a tool call's
        argument) names the copy, so the agent goes on with its own files."""
        if self.workdir is None or self.workdir == workdir:
            return self.messages
        old, new = str(self.workdir), str(workdir)
        return tuple(
            attrs.evolve(
                m,
                content=m.content.replace(old, new),
                tool_calls=tuple(
                    attrs.evolve(c, arguments=c.arguments.replace(old, new)) for c in m.tool_calls
                ),
            )
            for m in self.messages
        )


def resume_point(log_dir: Path, answer: str) -> ResumePoint:
    """Where the paused run in ``log_dir`` goes on, once ``answer`` is given."""
    events = _events(log_dir)
    asked, count = _pending(log_dir, events)
    lines = _agent_lines(log_dir, asked.agent)
    if not lines:
        raise ResumeError(
            f"{log_dir}: {TRANSCRIPTS} has no line of {asked.agent}, which asked: its "
            "transcript is needed to go on; run the task again"
        )
    last = lines[-1]
    purpose, round_ = CallPurpose(last["purpose"]), last["round"]
    if purpose is CallPurpose.ROUND:
        _only_agent_rounds(log_dir, events, asked.agent)
    same = [line for line in lines if line["purpose"] == purpose.value and line["round"] == round_]
    if purpose is CallPurpose.PRESENT:
        # A presentation asked again (its presenter restarted) starts a new transcript
        # under the same round: the last one is the one that asked.
        starts = [i for i, line in enumerate(same) if line["role"] == "system"]
        same = same[starts[-1] :] if starts else same
    messages = [_message(line) for line in same]
    prompt_length = next(
        (i for i, m in enumerate(messages) if m.role == "assistant"), len(messages)
    )
    messages += _answered(asked, answer)
    return ResumePoint(
        agent=asked.agent,
        purpose=purpose,
        round=round_,
        messages=tuple(messages),
        prompt_length=prompt_length,
        question_id=asked.question_id,
        answer=answer,
        last_question=count,
        workdir=Path(os.path.realpath(log_dir)),
        history=tuple(
            e
            for e in events
            if isinstance(e, AnswerAdded | VoteAdded | AnswerRepeated | AgentExcluded)
        ),
    )


def _events(log_dir: Path) -> list[Event]:
    """The whole run's events: those of the runs it resumed first (a run paused again after
    a resume has in its own log only what happened since), then its own."""
    if not (log_dir / EVENTS).is_file():
        raise ResumeError(f"{log_dir}: no {EVENTS} here: give the log directory of a paused run")
    try:
        chain = lineage(log_dir)
    except LineageError as exc:
        raise ResumeError(str(exc)) from None
    return [event for run in chain for event in read_event_log(run / EVENTS).events]


def _pending(log_dir: Path, events: list[Event]) -> tuple[QuestionAsked, int]:
    """The question the run waits on, and the highest question number in the log."""
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
            f"{log_dir}: the run waits on no question (it did not pause): nothing to answer"
        )
    return pending[-1], highest


def _only_agent_rounds(log_dir: Path, events: list[Event], agent: str) -> None:
    """A question asked in a round is resumed only when the asking agent is the run's one
    agent: the rounds of the others (which never ask) are not rebuilt."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    others = [a for a in started.agents if a != agent] if started is not None else []
    if others:
        raise ResumeError(
            f"{log_dir}: {agent} asked in an answer round of a run of {len(others) + 1} "
            "agents; only a single agent's rounds and a presenter's presentation can be "
            "resumed (the other agents' rounds are not rebuilt): run the task again"
        )


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
    """The answer as the round would have had it, after the asking call when one asked. A
    question asked without a call is in the transcript already (a reply that wrote it as
    text, a PAOR reflection's ``needs_user``): the answer is the next user message."""
    text = reply_text(Reply(value=answer, source=ReplySource.USER))
    if not asked.call_id:
        return [ChatMessage(role="user", content=text)]
    question = Question(
        question=asked.question,
        context=asked.context,
        severity=asked.severity,
        options=asked.options,
        default=asked.default,
    )
    call = ToolCall(id=asked.call_id, name=ASK_USER.name, arguments=question_json(question))
    return [
        ChatMessage(role="assistant", tool_calls=(call,)),
        ChatMessage(role="tool", content=text, tool_call_id=asked.call_id),
    ]
