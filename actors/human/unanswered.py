"""Questions nobody can answer now: headless runs choose what happens (``--on-question``).

``default`` takes the question's default (recorded as an assumption, shown in the result);
``fail`` ends the run as failed with the question in its result; ``pause`` ends it as paused,
to be continued with the answer later (``conclave resume RUN_DIR --answer VALUE``).
"""

from __future__ import annotations

import enum

import attrs

from conclave.actors.human.questions import PendingQuestion, Reply, ReplySource

__all__ = ["NobodyAnswers", "OnQuestion", "TakeDefault", "Unanswered", "gate_for"]


class OnQuestion(enum.Enum):
    DEFAULT = "default"
    FAIL = "fail"
    PAUSE = "pause"


class Unanswered(Exception):
    """Raised by a gate that cannot answer: the run ends ``how`` (fail or pause) with the
    question pending in its result."""

    def __init__(self, how: OnQuestion) -> None:
        super().__init__(f"nobody can answer the question now ({how.value})")
        self.how = how


class TakeDefault:
    """``--on-question default``: the question's default, recorded as an assumption."""

    async def ask(self, asked: PendingQuestion) -> Reply:
        return Reply(value=asked.question.default, source=ReplySource.DEFAULT)


@attrs.frozen
class NobodyAnswers:
    """``--on-question fail`` or ``pause``: the run ends with the question pending."""

    how: OnQuestion = attrs.field(
        validator=attrs.validators.in_([OnQuestion.FAIL, OnQuestion.PAUSE])
    )

    async def ask(self, asked: PendingQuestion) -> Reply:
        raise Unanswered(self.how)


def gate_for(policy: OnQuestion) -> TakeDefault | NobodyAnswers:
    """The headless gate for an ``--on-question`` policy."""
    return TakeDefault() if policy is OnQuestion.DEFAULT else NobodyAnswers(policy)
