"""The question desk puts one question at a time to the gate, in the order they came, and
pauses the run clock while one waits; a default taken for nobody is an assumption."""

from __future__ import annotations

import trio
import trio.testing

from conclave.actors.events.base import DomainEvent
from conclave.actors.human.desk import QuestionDesk
from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered
from conclave.actors.human.questions import (
    ANSWER_PREFIXES,
    NO_DEFAULT,
    PendingQuestion,
    Question,
    Reply,
    ReplySource,
    Severity,
    reply_text,
)
from conclave.actors.human.unanswered import OnQuestion
from conclave.actors.run.clock import RunClock
from tests.questions.helpers import Person


def _never(how: OnQuestion) -> None:
    raise AssertionError(f"the run was halted ({how})")


def _question(text: str) -> Question:
    return Question(question=text, severity=Severity.MAJOR, default="d")


async def test_questions_are_shown_one_at_a_time_in_the_order_they_came(
    autojump_clock: object,
) -> None:
    person = Person(seconds=5.0)
    desk = QuestionDesk(person, clock=None, halt=_never)
    events: list[DomainEvent] = []
    async with trio.open_nursery() as nursery:
        for name in ("first", "second", "third"):
            nursery.start_soon(desk.ask, name, _question(name), events.append)
            await trio.testing.wait_all_tasks_blocked()

    assert person.most_at_once == 1
    assert [q.question for _, q in person.asked] == ["first", "second", "third"]


async def test_the_clock_is_paused_only_while_the_gate_decides(autojump_clock: object) -> None:
    clock = RunClock(timeout=None)
    desk = QuestionDesk(Person(seconds=100.0), clock=clock, halt=_never)
    await trio.sleep(1.0)

    await desk.ask("a", _question("q"), lambda event: None)
    await trio.sleep(2.0)

    assert clock.elapsed() == 3.0


class Nobody:
    async def ask(self, asked: PendingQuestion) -> Reply:
        return Reply(value=asked.question.default, source=ReplySource.DEFAULT)


async def test_a_default_taken_for_nobody_is_recorded_as_an_assumption(
    autojump_clock: object,
) -> None:
    events: list[DomainEvent] = []
    await QuestionDesk(Nobody(), clock=None, halt=_never).ask(
        "a", _question("Which?"), events.append
    )

    answered, assumed = events[1:]
    assert isinstance(answered, QuestionAnswered) and answered.source is ReplySource.DEFAULT
    assert assumed == AssumptionRecorded(
        at=assumed.at, agent="a", question="Which?", assumption="d"
    )


async def test_a_question_without_a_default_is_assumed_as_the_agents_own_choice(
    autojump_clock: object,
) -> None:
    events: list[DomainEvent] = []
    undecided = Question(question="Which?", severity=Severity.MAJOR)
    await QuestionDesk(Nobody(), clock=None, halt=_never).ask("a", undecided, events.append)

    assumed = events[-1]
    assert isinstance(assumed, AssumptionRecorded)
    assert assumed.assumption == NO_DEFAULT


def test_the_agent_is_told_a_question_without_a_default_is_its_own_to_decide() -> None:
    text = reply_text(Reply(value="", source=ReplySource.DEFAULT))

    assert text.startswith(ANSWER_PREFIXES)
    assert "no default" in text
    assert "safest" in text
