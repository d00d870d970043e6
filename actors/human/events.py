"""Events of the person in the loop: questions agents ask, and tool calls that must ask.

``QuestionAsked`` is recorded when a question reaches the gate (it is then shown to the user;
questions queue and are shown one at a time), ``QuestionAnswered`` when the gate replies.
``AssumptionRecorded`` is a decision nobody was asked about: an agent's ``record_assumption``
call, or a question's default taken because nobody was there.

``ToolApprovalRequested`` and ``ToolApprovalDecided`` are recorded by
:class:`~actors.human.tool_approval.ToolApprovalGate` around each call that must ask, so the
event log, ``conclave replay`` and stream-json say who was asked what and how it was answered
(a headless refusal included), not only that the call failed.
"""

from __future__ import annotations

import enum

from conclave.actors.events.base import DomainEvent
from conclave.actors.human.questions import QuestionOption, ReplySource, Severity
from conclave.runtime import message

__all__ = [
    "ApprovalOutcome",
    "AssumptionRecorded",
    "QuestionAnswered",
    "QuestionAsked",
    "ToolApprovalDecided",
    "ToolApprovalRequested",
]


@message()
class QuestionAsked(DomainEvent):
    agent: str
    question_id: str
    """Unique in the run: the ``QuestionAnswered`` that settles it carries the same id."""
    question: str
    context: str
    severity: Severity
    options: tuple[QuestionOption, ...]
    default: str
    call_id: str = ""
    """The ``ask_user`` call that asked; empty for a question written as text. A paused
    run is resumed by answering this call."""


@message()
class QuestionAnswered(DomainEvent):
    agent: str
    question_id: str
    answer: str
    source: ReplySource


@message()
class AssumptionRecorded(DomainEvent):
    agent: str
    question: str
    """What the agent would have asked."""
    assumption: str
    """What it went on with."""


class ApprovalOutcome(enum.Enum):
    ALLOWED_ONCE = "allowed_once"
    ALLOWED_FOR_SESSION = "allowed_for_session"
    DENIED = "denied"


@message()
class ToolApprovalRequested(DomainEvent):
    """A call that the permission mode says must ask waits for the person."""

    agent: str
    tool: str
    call_id: str
    subject: str | None
    """The path or command it touches, as written (``None``: neither)."""
    reason: str
    """Why it asks."""


@message()
class ToolApprovalDecided(DomainEvent):
    """The person (or the headless policy) decided the call ``call_id``."""

    agent: str
    tool: str
    call_id: str
    outcome: ApprovalOutcome
    feedback: str = ""
    """With a denial: what the model is told (empty: no reason given)."""
