"""What a served run asks its watchers: questions and tool calls that must ask.

Each goes to the run's watchers (a ``question_asked`` event line, an ``approval_requested``
line), one at a time, and waits for a decision from any authenticated client, which
:class:`~ui.serve.runs.ServedRun` takes (``answer``, ``approve``), or for ``decision_timeout``:
then the question's default is taken, or the call is denied, the model told that nobody
answered. Cancellation (the run ended) abandons the wait: the call never runs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs
import trio

from conclave.actors.human.questions import PendingQuestion, Reply, ReplySource
from conclave.actors.human.tool_approval import (
    AllowForSession,
    AllowOnce,
    Deny,
    ToolApprovalRequest,
    ToolDecision,
)
from conclave.ui.serve.protocol import Approval, ApprovalDecision, Approve

if TYPE_CHECKING:
    from conclave.ui.serve.runs import ServedRun

__all__ = [
    "WatcherApprovals",
    "WatcherQuestions",
    "decision_of",
    "nobody_answered",
    "question_fields",
]


class WatcherQuestions:
    """Questions of a served run: each goes to its watchers as its ``question_asked`` line
    and waits for an ``answer`` from any client (:meth:`ServedRun.answer`), or for
    ``timeout``: then the question's default is taken (and recorded as an assumption)."""

    def __init__(self, run: ServedRun, timeout: float | None) -> None:
        self._run = run
        self._timeout = timeout

    async def ask(self, asked: PendingQuestion) -> Reply:
        send, receive = trio.open_memory_channel[Reply](1)
        self._run.question_opened(asked, send)
        try:
            with trio.move_on_after(math.inf if self._timeout is None else self._timeout):
                return await receive.receive()
            return Reply(value=asked.question.default, source=ReplySource.DEFAULT)
        finally:
            self._run.question_closed()


class WatcherApprovals:
    """The :class:`~actors.human.tool_approval.ToolApprover` of a served run: each call
    that must ask goes to its watchers as an ``approval_requested`` line, one at a time, and
    waits for an ``approve`` from any client (:meth:`ServedRun.approve`), or for ``timeout``:
    then it is denied, the model told that nobody answered. Cancellation (the run ended)
    closes it; the call never runs."""

    def __init__(self, run: ServedRun, timeout: float | None) -> None:
        self._run = run
        self._timeout = timeout
        self._one_at_a_time = trio.Lock()
        self._asked = 0

    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        async with self._one_at_a_time:
            self._asked += 1
            approval = Approval(
                approval_id=f"a{self._asked}",
                agent=request.agent,
                tool=request.tool,
                arguments=request.arguments,
                subject=request.subject,
                reason=request.reason,
                timeout=self._timeout,
            )
            send, receive = trio.open_memory_channel[ToolDecision](1)
            self._run.approval_opened(approval, send)
            try:
                with trio.move_on_after(math.inf if self._timeout is None else self._timeout):
                    return await receive.receive()
                return Deny(feedback=nobody_answered(self._timeout), by_person=False)
            finally:
                self._run.approval_closed()


def nobody_answered(timeout: float | None) -> str:
    """What the model reads when no watcher decided its call in time."""
    return (
        f"nobody answered within {timeout:g} seconds: the call was not run (none of the "
        "served run's watchers approved it); go on without it, and say in your answer what "
        "you needed it for"
    )


def decision_of(message: Approve) -> ToolDecision:
    if message.decision is ApprovalDecision.ALLOW_ONCE:
        return AllowOnce()
    if message.decision is ApprovalDecision.ALLOW_SESSION:
        return AllowForSession()
    return Deny(feedback=message.feedback.strip())


def question_fields(asked: PendingQuestion) -> dict[str, Any]:
    """A waiting question as its ``question_asked`` line says it."""
    question = asked.question
    return {
        "agent": asked.agent,
        "question_id": asked.question_id,
        "question": question.question,
        "context": question.context,
        "severity": question.severity.value,
        "options": [attrs.asdict(o) for o in question.options],
        "default": question.default,
    }
