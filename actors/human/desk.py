"""The run's question desk: one question at a time reaches the gate, with the clock paused.

Agents that may ask (a single-agent run's agent, the presenter) hand their questions to the
run's one :class:`QuestionDesk`. Questions queue in the order they came (trio's lock is fair)
and the gate sees one at a time. While a question waits for its answer the run's timer is
paused, as it is during the override window: a person thinking never causes a timeout.
Every question is recorded (``QuestionAsked``, then ``QuestionAnswered``), and a default
taken for nobody (``ReplySource.DEFAULT``) is recorded as an assumption too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import trio

from conclave.actors.events.base import DomainEvent
from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import (
    Assumption,
    Question,
    QuestionGate,
    Reply,
    ReplySource,
)
from conclave.actors.run.clock import RunClock

__all__ = ["QuestionDesk", "Recorder"]

Recorder = Callable[[DomainEvent], None]
"""Where the desk's events go: the asking agent's ``ActorContext.record``."""


class QuestionDesk:
    def __init__(self, gate: QuestionGate, clock: RunClock | None) -> None:
        self.gate = gate
        self._clock = clock
        self._turn = trio.Lock()
        self._ids = itertools.count(1)

    async def ask(self, agent: str, question: Question, record: Recorder) -> Reply:
        """Queue for the gate, then ask it with the clock paused. Cancelled while queued or
        asked, the question is abandoned, the clock runs again and the next one goes on."""
        async with self._turn:
            question_id = f"q{next(self._ids)}"
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
                )
            )
            if self._clock is not None:
                self._clock.pause()
            try:
                reply = await self.gate.ask(agent, question)
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
            assumed = Assumption(question=question.question, assumption=reply.value)
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
