"""What happens when agents ask the user: a question asked, answered, or an assumption made.

``QuestionAsked`` is recorded when a question reaches the gate (it is then shown to the user;
questions queue and are shown one at a time), ``QuestionAnswered`` when the gate replies.
``AssumptionRecorded`` is a decision nobody was asked about: an agent's ``record_assumption``
call, or a question's default taken because nobody was there.
"""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.human.questions import QuestionOption, ReplySource, Severity
from conclave.runtime import message

__all__ = ["AssumptionRecorded", "QuestionAnswered", "QuestionAsked"]


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
