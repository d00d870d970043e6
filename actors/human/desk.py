"""The run's question desk: one question at a time reaches the gate, with the clock paused.

Agents that may ask (a single-agent run's agent, the presenter) hand their questions to the
run's one :class:`QuestionDesk`. Questions queue in the order they came (trio's lock is fair)
and the gate sees one at a time. While a question waits for its answer the run's timer is
paused, as it is during the override window: a person thinking never causes a timeout.
Every question is recorded (``QuestionAsked``, then ``QuestionAnswered``), and a default
taken for nobody (``ReplySource.DEFAULT``) is recorded as an assumption too. A gate that
cannot answer at all (:class:`~actors.human.unanswered.Unanswered`: a headless run's
``--on-question fail`` or ``pause``) ends the run through ``halt``, with the question left
unanswered in the log: the run's result names it, and a paused run is resumed from it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import trio

from conclave.actors.events.base import DomainEvent
from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import (
    NO_DEFAULT,
    Assumption,
    PendingQuestion,
    Question,
    QuestionGate,
    Reply,
    ReplySource,
)
from conclave.actors.human.unanswered import OnQuestion, Unanswered
from conclave.actors.run.clock import RunClock

__all__ = ["Halt", "QuestionDesk", "Recorder", "question_number"]

Recorder = Callable[[DomainEvent], None]
"""Where the desk's events go: the asking agent's ``ActorContext.record``."""
Halt = Callable[[OnQuestion], None]
"""Ends the run because nobody can answer (fail or pause): the run's handle."""


_PREFIX = "q"
"""Question ids are ``q1``, ``q2``...: numbered in the order the desk took them."""


def question_number(question_id: str) -> int:
    """The number in a question id the desk made (0 for any other id)."""
    digits = question_id.removeprefix(_PREFIX)
    return int(digits) if digits.isdigit() else 0


class QuestionDesk:
    def __init__(
        self, gate: QuestionGate, clock: RunClock | None, *, halt: Halt, after: int = 0
    ) -> None:
        """``after``: the last question number already used (a resumed run's paused one)."""
        self.gate = gate
        self._clock = clock
        self._halt = halt
        self._turn = trio.Lock()
        self._ids = itertools.count(after + 1)

    async def ask(
        self, agent: str, question: Question, record: Recorder, *, call_id: str = ""
    ) -> Reply:
        """Queue for the gate, then ask it with the clock paused. Cancelled while queued or
        asked, the question is abandoned, the clock runs again and the next one goes on.
        When nobody can answer, the run is halted and this waits for the cancellation that
        ends it."""
        async with self._turn:
            question_id = f"{_PREFIX}{next(self._ids)}"
            record(
                QuestionAsked(
                    at=trio.current_time(),
                    agent=agent,
                    question_id=question_id,
                    question=question.question,
                    context=question.context,
                    severity=question.severity,
                    options=question.options,
                    default=question.default,
                    call_id=call_id,
                )
            )
            if self._clock is not None:
                self._clock.pause()
            try:
                asked = PendingQuestion(agent=agent, question_id=question_id, question=question)
                reply = await self.gate.ask(asked)
            except Unanswered as nobody:
                self._halt(nobody.how)
                await trio.sleep_forever()
            finally:
                if self._clock is not None:
                    self._clock.resume()
        now = trio.current_time()
        record(
            QuestionAnswered(
                at=now,
                agent=agent,
                question_id=question_id,
                answer=reply.value,
                source=reply.source,
            )
        )
        if reply.source is ReplySource.DEFAULT:
            assumed = Assumption(question=question.question, assumption=reply.value or NO_DEFAULT)
            self.assume(agent, assumed, record)
        return reply

    def assume(self, agent: str, assumption: Assumption, record: Recorder) -> None:
        """Record what ``agent`` went on with instead of asking."""
        record(
            AssumptionRecorded(
                at=trio.current_time(),
                agent=agent,
                question=assumption.question,
                assumption=assumption.assumption,
            )
        )
