"""The HumanGate: where a run waits for a person, and the policies that answer for one.

Today a gate decides the override window: after the vote, a person may accept the winner or
choose another agent to present. Plan approval, questions from agents and run approval will
join it as further methods. While a gate is deciding, the run's timer is paused: a person
reading a dialog never causes a timeout.

Headless runs pass a policy instead of a person: :class:`AcceptWinner` (the default when a
gate is wanted but nobody is there) or :class:`ChooseAgent` (scripts and tests).
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = [
    "Accept",
    "AcceptWinner",
    "Choose",
    "ChooseAgent",
    "HumanGate",
    "OverrideChoice",
    "OverrideRequest",
]


@attrs.frozen(kw_only=True)
class OverrideRequest:
    """What a person sees when the vote is over."""

    winner: str
    """The agent whose answer won."""
    label: str
    tally: dict[str, int]
    """Answer label → votes."""
    answers: dict[str, str]
    """Agent → label of its latest answer: who may be chosen instead."""


@attrs.frozen(kw_only=True)
class Accept:
    """Keep the vote's winner."""


@attrs.frozen(kw_only=True)
class Choose:
    """Let ``agent`` present instead (it must have an answer)."""

    agent: str


OverrideChoice = Accept | Choose


class HumanGate(Protocol):
    async def override(self, request: OverrideRequest) -> OverrideChoice:
        """Decide the override window. Cancellation (the run ended) abandons the question."""
        ...


class AcceptWinner:
    """Nobody is there: the vote stands."""

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        return Accept()


@attrs.frozen
class ChooseAgent:
    """Always choose ``agent`` (scripts and tests)."""

    agent: str

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        return Choose(agent=self.agent)
