"""The coordination modes as routing rules, and the observer that keeps their facts.

Facts kept by :class:`AnswerProgress` (from messages the router delivers), one key per agent
so a hold waiting on one agent is re-checked only when that agent's facts change:
``answered:<agent>`` (has an accepted answer, or gave a current answer's text, which counted
as its vote), ``live:<agent>`` (false once excluded; absent means live) and ``all_answered``
(every started, live agent has answered). ``first_vote_wait_over`` is kept by the
InjectionBus (see :class:`FirstVoteWaitsForAnswers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from conclave.actors.coordination.protocol import (
    AgentFailed,
    AnswerAccepted,
    AnswerSupported,
    AnswerUpdate,
    StartTask,
    VotesReset,
    VotingOpen,
)
from conclave.runtime import DELIVER, Decision, Drop, Envelope, Facts, Hold

__all__ = [
    "FIRST_VOTE_WAIT_OVER",
    "QUIET",
    "AnswerProgress",
    "DeferVoting",
    "DropInjection",
    "FirstVoteWaitsForAnswers",
    "HoldUntilQuiet",
    "UpdatesAfterFirstAnswer",
]

ALL_ANSWERED = "all_answered"


def answered_key(agent: str) -> str:
    return f"answered:{agent}"


def live_key(agent: str) -> str:
    return f"live:{agent}"


class AnswerProgress:
    """Watches StartTask, AnswerAccepted, AnswerSupported and AgentFailed; publishes who has
    answered."""

    payloads = (StartTask, AnswerAccepted, AnswerSupported, AgentFailed)

    def __init__(self) -> None:
        self._live: set[str] = set()
        self._answered: set[str] = set()
        self._waiting: set[str] = set()
        """Live agents without an answer yet: ``all_answered`` is "this is empty"."""

    def observe(self, envelope: Envelope, facts: Facts) -> Mapping[str, Any] | None:
        payload = envelope.payload
        if isinstance(payload, StartTask):
            # ``live:<agent>`` defaults to true, so starting publishes nothing: a run of ten
            # thousand agents would otherwise re-examine held mail ten thousand times.
            agent = envelope.recipient.key
            self._live.add(agent)
            if agent not in self._answered:
                self._waiting.add(agent)
            return None
        if isinstance(payload, AnswerAccepted | AnswerSupported):
            if payload.agent in self._answered:
                return None
            self._answered.add(payload.agent)
            self._waiting.discard(payload.agent)
            change = {answered_key(payload.agent): True}
        elif isinstance(payload, AgentFailed):
            self._live.discard(payload.agent)
            self._waiting.discard(payload.agent)
            change = {live_key(payload.agent): False}
        else:
            return None
        return {**change, ALL_ANSWERED: bool(self._live) and not self._waiting}


class DropInjection:
    """``disable_injection``: agents work independently; every update is a DeadLetter."""

    name = "disable_injection"
    payloads = (AnswerUpdate,)

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, self.payloads):
            return Drop("injection disabled: agents work independently")
        return DELIVER


def _all_answered(facts: Facts) -> bool:
    return bool(facts.get(ALL_ANSWERED, False))


class DeferVoting:
    """``defer_voting_until_all_answered``: "you may vote now" waits for every live agent."""

    name = "defer_voting_until_all_answered"
    payloads = (VotingOpen,)

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, self.payloads) and not _all_answered(facts):
            return Hold(
                _all_answered,
                "voting deferred until every live agent has answered",
                watch=frozenset({ALL_ANSWERED}),
            )
        return DELIVER


FIRST_VOTE_WAIT_OVER = "first_vote_wait_over"
"""Fact kept by the InjectionBus: ``first_vote_wait`` seconds have passed since the run's
first answer."""


def _first_answers_in(facts: Facts) -> bool:
    return _all_answered(facts) or bool(facts.get(FIRST_VOTE_WAIT_OVER, False))


class FirstVoteWaitsForAnswers:
    """``first_vote_wait``: "you may vote now" waits until every live agent has answered
    once, or until the wait (counted from the run's first answer) is over.

    Answers spread out (over HTTP, or with models of different speed) by more than the quiet
    period would otherwise open voting between them: each early vote is reset by the next
    late answer and cast again, up to once per late answer. Held here, every agent's first
    vote sees every first answer, and a run costs one answer and one vote per agent. Once
    every agent has answered the rule holds nothing, so it touches only first votes (and
    the votes of agents that answer twice before the others answer once)."""

    name = "first_vote_waits_for_first_answers"
    payloads = (VotingOpen,)

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, self.payloads) and not _first_answers_in(facts):
            return Hold(
                _first_answers_in,
                "voting waits for the first answers of the agents still answering",
                watch=frozenset({ALL_ANSWERED, FIRST_VOTE_WAIT_OVER}),
            )
        return DELIVER


class UpdatesAfterFirstAnswer:
    """An agent gets no updates before its first answer: they wait until it has one."""

    name = "updates_after_first_answer"
    payloads = (AnswerUpdate,)

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if not isinstance(envelope.payload, self.payloads):
            return DELIVER
        agent = envelope.recipient.key
        waiting = _AnsweredOrGone(agent)
        if waiting(facts):
            return DELIVER
        return Hold(waiting, f"{agent} has not answered yet", watch=waiting.watch)


@attrs.frozen
class _AnsweredOrGone:
    agent: str

    @property
    def watch(self) -> frozenset[str]:
        return frozenset({answered_key(self.agent), live_key(self.agent)})

    def __call__(self, facts: Facts) -> bool:
        return bool(facts.get(answered_key(self.agent))) or not facts.get(
            live_key(self.agent), True
        )


QUIET = "answers_quiet"
"""Fact kept by the InjectionBus: no answer was accepted for one quiet period."""


def _quiet(facts: Facts) -> bool:
    return bool(facts.get(QUIET, True))


class HoldUntilQuiet:
    """Hold whatever would start an agent's round on others' answers until answers go quiet.

    During a burst of answers every such message is stale within milliseconds; holding
    updates, "you may vote now" and vote resets until no answer has arrived for the quiet
    period turns a burst into one round per agent, at the cost of at most that period.
    """

    name = "hold_until_answers_quiet"
    payloads = (AnswerUpdate, VotingOpen, VotesReset)

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, self.payloads) and not _quiet(facts):
            return Hold(_quiet, "answers are still arriving", watch=frozenset({QUIET}))
        return DELIVER
