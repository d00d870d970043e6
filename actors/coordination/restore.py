"""A paused run's coordination, replayed into the state of the run that resumes it.

A resumed run (``conclave resume``) starts from a fresh :class:`CoordinationState` and the
paused run's :data:`~actors.agent.resume.History`: its answers, votes and exclusions in the
order coordination decided them. Replaying them through the state's own transitions (the
answers submitted again, the votes cast again) gives the labels, the cleared votes and the
supporters the paused run had, by the same rules, rather than a second copy of those rules
here. A replayed decision the state does not take again (the config changed since the pause:
another agent list, another answer cap) is a :class:`RestoreError`, never a quietly
different run.

The restored state is marked :attr:`~CoordinationState.resumed`: the coordinator goes on from
it (a presentation, or the single agent's next round) instead of starting the task anew.
"""

from __future__ import annotations

from collections.abc import Sequence

from conclave.actors.agent.resume import History
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    AnswerRepeated,
    VoteAdded,
)
from conclave.actors.coordination.label import Label
from conclave.actors.coordination.state import CoordinationState
from conclave.config.schema import OrchestratorConfig

__all__ = ["RestoreError", "restored_state"]


class RestoreError(Exception):
    """The paused run's coordination does not replay under this config; says what differs."""


def restored_state(
    *,
    task: str,
    agents: Sequence[str],
    orchestrator: OrchestratorConfig,
    asking: str,
    history: History,
) -> CoordinationState:
    """The coordination state the paused run had when ``asking`` asked, from ``history``."""
    if asking not in agents:
        raise RestoreError(f"{asking}, which asked, is not an agent of the config now")
    state = CoordinationState(task=task, agents=agents, orchestrator=orchestrator)
    for event in history:
        if isinstance(event, AnswerAdded):
            _answer(state, event)
        elif isinstance(event, VoteAdded):
            _vote(state, event)
        elif isinstance(event, AnswerRepeated):
            _known(state, event.agent)
            state.supporters.add(event.agent)
        else:
            _excluded(state, event)
    state.resumed = True
    return state


def _answer(state: CoordinationState, event: AnswerAdded) -> None:
    _known(state, event.agent)
    outcome = state.submit_answer(event.agent, event.content, _all_labels(state))
    taken = outcome.answer.label if outcome.answer is not None else None
    if taken != event.label:
        why = outcome.error or (f"it was taken as {taken}" if taken else "it was not taken")
        raise RestoreError(
            f"{event.agent}'s answer {event.label} does not replay: {why.rstrip('.')}"
        )


def _vote(state: CoordinationState, event: VoteAdded) -> None:
    _known(state, event.voter)
    label = Label.parse(event.label)
    if event.same_answer:
        target = next((a for a in state.answers if a.label == event.label), None)
        if target is not None:
            state.submit_answer(event.voter, target.content, _all_labels(state))
    else:
        state.submit_vote(
            event.voter, label.author, event.reason, state.visible_answer_count(event.voter)
        )
    voted = state.votes.get(event.voter)
    if voted is None or voted.label != event.label:
        raise RestoreError(f"{event.voter}'s vote for {event.label} does not replay")


def _excluded(state: CoordinationState, event: AgentExcluded) -> None:
    _known(state, event.agent)
    state.fail(event.agent, event.reason)


def _known(state: CoordinationState, agent: str) -> None:
    if not state.knows(agent):
        raise RestoreError(f"the paused run's agent {agent} is not an agent of the config now")


def _all_labels(state: CoordinationState) -> tuple[str, ...]:
    """Every answer so far, as a replayed submission's ``shown``: an answer added then was
    taken as new whatever it was shown, and an answer that counted as a vote had been shown
    every answer its agent could see (that is what made it a vote)."""
    return tuple(a.label for a in state.answers)
