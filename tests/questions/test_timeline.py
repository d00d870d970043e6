"""Progress on stderr and ``conclave replay`` say what was asked, how it was answered, and
what was assumed, one line each."""

from __future__ import annotations

from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import ReplySource, Severity
from conclave.ui.timeline import describe


def test_a_question_is_one_line_with_its_severity() -> None:
    asked = QuestionAsked(
        at=1.0,
        agent="a1",
        question_id="q1",
        question="Delete the\nold files?",
        context="",
        severity=Severity.CRITICAL,
        options=(),
        default="keep",
    )

    assert describe(asked) == "a1 asks (critical): Delete the old files?"


def test_an_answer_says_whether_the_user_gave_it_or_the_default_was_taken() -> None:
    by_user = QuestionAnswered(
        at=1.0, agent="a1", question_id="q1", answer="delete", source=ReplySource.USER
    )
    by_default = QuestionAnswered(
        at=1.0, agent="a1", question_id="q1", answer="keep", source=ReplySource.DEFAULT
    )

    assert describe(by_user) == "a1's question answered by the user: delete"
    assert describe(by_default) == "a1's question answered by the default: keep"


def test_an_assumption_is_one_line() -> None:
    assumed = AssumptionRecorded(at=1.0, agent="a2", question="Which license?", assumption="MIT")

    assert describe(assumed) == "a2 assumed: Which license? -> MIT"
