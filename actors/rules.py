"""The coordination modes as routing rules, and the observer that keeps their facts.

Facts kept by :class:`AnswerProgress` (from messages the router delivers):
``answered`` (agents with at least one accepted answer), ``live`` (started and not excluded),
``all_answered`` and ``progress`` (a counter that changes whenever any of them does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.messages import (
    AgentFailed,
    AnswerAccepted,
    AnswerUpdate,
    StartTask,
    VotesReset,
    VotingOpen,
)
from runtime import DELIVER, Decision, Drop, Envelope, Facts, Hold

__all__ = [
    "QUIET",
    "AnswerProgress",
    "DeferVoting",
    "DropInjection",
    "HoldUntilQuiet",
    "UpdatesAfterFirstAnswer",
]


class AnswerProgress:
    """Watches StartTask, AnswerAccepted and AgentFailed; publishes who has answered.

    The sets are shared (not copied) with the facts so a 10,000-agent run does not copy
    them on every answer; ``progress`` is what makes the router re-examine held mail.
    """

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.answered: set[str] = set()
        self._waiting: set[str] = set()
        self._progress = 0

    def observe(self, envelope: Envelope, facts: Facts) -> Mapping[str, Any] | None:
        payload = envelope.payload
        if isinstance(payload, StartTask):
            agent = envelope.recipient.key
            self.live.add(agent)
            if agent not in self.answered:
                self._waiting.add(agent)
        elif isinstance(payload, AnswerAccepted):
            if payload.agent in self.answered:
                return None
            self.answered.add(payload.agent)
            self._waiting.discard(payload.agent)
        elif isinstance(payload, AgentFailed):
            self.live.discard(payload.agent)
            self._waiting.discard(payload.agent)
        else:
            return None
        self._progress += 1
        return {
            "live": self.live,
            "answered": self.answered,
            "all_answered": bool(self.live) and not self._waiting,
            "progress": self._progress,
        }


class DropInjection:
    """``disable_injection``: agents work independently; every update is a DeadLetter."""

    name = "disable_injection"

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, AnswerUpdate):
            return Drop("injection disabled: agents work independently")
        return DELIVER


def _all_answered(facts: Facts) -> bool:
    return bool(facts.get("all_answered", False))


class DeferVoting:
    """``defer_voting_until_all_answered``: "you may vote now" waits for every live agent."""

    name = "defer_voting_until_all_answered"

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, VotingOpen) and not _all_answered(facts):
            return Hold(_all_answered, "voting deferred until every live agent has answered")
        return DELIVER


class UpdatesAfterFirstAnswer:
    """An agent gets no updates before its first answer: they wait until it has one."""

    name = "updates_after_first_answer"

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if not isinstance(envelope.payload, AnswerUpdate):
            return DELIVER
        agent = envelope.recipient.key
        if agent in facts.get("answered", ()):
            return DELIVER

        def answered_or_gone(f: Facts) -> bool:
            return agent in f.get("answered", ()) or agent not in f.get("live", ())

        return Hold(answered_or_gone, f"{agent} has not answered yet")


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

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        payload = envelope.payload
        if isinstance(payload, AnswerUpdate | VotingOpen | VotesReset) and not _quiet(facts):
            return Hold(_quiet, "answers are still arriving")
        return DELIVER
