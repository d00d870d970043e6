"""DESIGN.md's one table, as ``config.modes``: mode state → exactly these overrides.

| agent mode | refinement | overrides |
|---|---|---|
| any | on | none |
| single | off | max_new_answers_per_agent=1, skip_voting, no final presentation,
|   |   | context_write_phase=coordination |
| multi | off | max_new_answers_per_agent=1, disable_injection, defer_voting_until_all_answered,
|   |   | final_answer_strategy=synthesize |

Plan mode is orthogonal: it picks the collaboration mode and never changes the overrides.
Pure functions, so every combination is checked without running anything.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest

from conclave.config.modes import AgentMode, CollaborationMode, ModeState, apply_modes, overrides
from conclave.config.schema import FinalAnswerStrategy, InFlightPolicy, OrchestratorConfig
from conclave.config.schema.context import ContextWritePhase
from tests.coordination.helpers import agent, config

SINGLE_OFF = {
    "max_new_answers_per_agent": 1,
    "skip_voting": True,
    "no_final_presentation": True,
    "context_write_phase": ContextWritePhase.COORDINATION,
}
MULTI_OFF = {
    "max_new_answers_per_agent": 1,
    "disable_injection": True,
    "defer_voting_until_all_answered": True,
    "final_answer_strategy": FinalAnswerStrategy.SYNTHESIZE,
}
TABLE: dict[tuple[AgentMode, bool], dict[str, Any]] = {
    (AgentMode.SINGLE, True): {},
    (AgentMode.MULTI, True): {},
    (AgentMode.SINGLE, False): SINGLE_OFF,
    (AgentMode.MULTI, False): MULTI_OFF,
}
COMBINATIONS = [
    ModeState(agent_mode=mode, refinement=refinement, collaboration=collaboration)
    for mode, refinement, collaboration in itertools.product(
        AgentMode, (True, False), CollaborationMode
    )
]


def _name(state: ModeState) -> str:
    refinement = "refinement-on" if state.refinement else "refinement-off"
    return f"{state.agent_mode.value}-{refinement}-{state.collaboration.value}"


@pytest.mark.parametrize("state", COMBINATIONS, ids=_name)
def test_overrides_are_exactly_the_tables_row(state: ModeState) -> None:
    assert overrides(state) == TABLE[state.agent_mode, state.refinement]


@pytest.mark.parametrize("state", COMBINATIONS, ids=_name)
def test_the_collaboration_mode_changes_no_override(state: ModeState) -> None:
    for other in CollaborationMode:
        assert overrides(state) == overrides(attrs.evolve(state, collaboration=other))


def test_plan_mode_is_the_plan_collaboration_mode() -> None:
    assert [ModeState(collaboration=mode).plan_mode for mode in CollaborationMode] == [
        mode is CollaborationMode.PLAN for mode in CollaborationMode
    ]


@pytest.mark.parametrize("state", COMBINATIONS, ids=_name)
def test_every_override_names_a_real_orchestrator_field(state: ModeState) -> None:
    fields = {f.name for f in attrs.fields(OrchestratorConfig)}
    assert set(overrides(state)) <= fields


# Every field set away from its default, so a clobbered field shows.
BASE = config(
    agent("first"),
    agent("second"),
    agent("third"),
    final_answer_strategy=FinalAnswerStrategy.WINNER_REUSE,
    visibility="ring",
    in_flight_policy=InFlightPolicy.CANCEL,
    answer_preview_chars=99,
    run_timeout=30.0,
    call_timeout=7.0,
    max_tries_per_round=5,
)


@pytest.mark.parametrize("state", COMBINATIONS, ids=_name)
def test_apply_modes_changes_the_overridden_fields_and_nothing_else(state: ModeState) -> None:
    applied = apply_modes(BASE, state).orchestrator
    changed = overrides(state)
    for field in attrs.fields(OrchestratorConfig):
        expected = changed.get(field.name, getattr(BASE.orchestrator, field.name))
        assert getattr(applied, field.name) == expected, field.name


@pytest.mark.parametrize("refinement", [True, False])
def test_multi_mode_runs_every_configured_agent(refinement: bool) -> None:
    applied = apply_modes(BASE, ModeState(agent_mode=AgentMode.MULTI, refinement=refinement))
    assert applied.agents == BASE.agents


@pytest.mark.parametrize("refinement", [True, False])
def test_single_mode_runs_the_first_agent_by_default(refinement: bool) -> None:
    applied = apply_modes(BASE, ModeState(agent_mode=AgentMode.SINGLE, refinement=refinement))
    assert [a.id for a in applied.agents] == ["first"]


def test_single_mode_runs_the_active_agent_when_one_is_named() -> None:
    state = ModeState(agent_mode=AgentMode.SINGLE, active_agent="third")
    assert [a.id for a in apply_modes(BASE, state).agents] == ["third"]


def test_single_mode_with_an_unknown_active_agent_names_the_configured_ones() -> None:
    state = ModeState(agent_mode=AgentMode.SINGLE, active_agent="fourth")
    with pytest.raises(ValueError) as caught:
        apply_modes(BASE, state)
    assert str(caught.value) == (
        "active agent 'fourth' is not configured; configured agents: first, second, third"
    )


def test_the_default_mode_state_is_multi_with_refinement_and_no_overrides() -> None:
    state = ModeState()
    assert (state.agent_mode, state.refinement, state.plan_mode) == (AgentMode.MULTI, True, False)
    assert apply_modes(BASE, state) == BASE
