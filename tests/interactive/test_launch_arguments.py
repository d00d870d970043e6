"""``launch_run``'s arguments: exactly its parameters, their defaults, and what is wrong said
so the agent can correct its call (config.launch)."""

from __future__ import annotations

import pytest

from conclave.config.launch import LAUNCH_PARAMETERS, LaunchError, launch_config, read_launch
from conclave.config.modes import AgentMode
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import FinalAnswerStrategy
from tests.interactive.helpers import panel

RESOLVED = ResolvedConfig(base=panel())


def test_the_parameters_are_exactly_those_of_the_issue() -> None:
    assert set(LAUNCH_PARAMETERS["properties"]) == {
        "task",
        "context",
        "agent_mode",
        "agents",
        "refinement",
        "planning_mode",
        "execute_after_planning",
        "coordination_overrides",
    }
    assert LAUNCH_PARAMETERS["required"] == ["task"]


def test_a_task_alone_is_a_multi_agent_run_with_refinement() -> None:
    request = read_launch({"task": "t"})
    assert request.agent_mode is AgentMode.MULTI
    assert request.refinement is True
    assert (request.planning_mode, request.execute_after_planning) == (False, False)


def test_single_mode_defaults_to_no_refinement() -> None:
    assert read_launch({"task": "t", "agent_mode": "single"}).refinement is False


def test_the_context_follows_the_task_in_the_first_message() -> None:
    request = read_launch({"task": "Fix the bug", "context": "It is in parser.py"})
    assert request.first_message.startswith("Fix the bug\n\n")
    assert request.first_message.endswith("It is in parser.py")


def test_a_misspelt_parameter_is_named_with_the_one_meant() -> None:
    with pytest.raises(LaunchError, match=r"unknown parameter 'tsk' \(did you mean 'task'\?\)"):
        read_launch({"tsk": "t"})


def test_a_missing_task_is_required() -> None:
    with pytest.raises(LaunchError, match="'task' is required"):
        read_launch({"context": "c"})


def test_a_parameter_of_the_wrong_type_says_what_it_must_be() -> None:
    with pytest.raises(LaunchError, match="'refinement' must be true or false"):
        read_launch({"task": "t", "refinement": "yes"})


def test_agents_narrow_a_multi_agent_run() -> None:
    config = launch_config(RESOLVED, read_launch({"task": "t", "agents": ["agent-1", "agent-3"]}))
    assert [a.id for a in config.agents] == ["agent-1", "agent-3"]


def test_single_mode_runs_the_named_agent_with_the_single_mode_overrides() -> None:
    request = read_launch({"task": "t", "agent_mode": "single", "agents": ["agent-2"]})
    config = launch_config(RESOLVED, request)
    assert [a.id for a in config.agents] == ["agent-2"]
    assert config.orchestrator.skip_voting is True


def test_an_unknown_agent_lists_the_configured_ones() -> None:
    with pytest.raises(LaunchError, match="configured agents: agent-1, agent-2, agent-3"):
        launch_config(RESOLVED, read_launch({"task": "t", "agents": ["agent-9"]}))


def test_coordination_overrides_win_over_the_mode_table() -> None:
    request = read_launch(
        {
            "task": "t",
            "refinement": False,
            "coordination_overrides": {"final_answer_strategy": "winner_reuse"},
        }
    )
    config = launch_config(RESOLVED, request)
    assert config.orchestrator.final_answer_strategy is FinalAnswerStrategy.WINNER_REUSE
    assert config.orchestrator.disable_injection is True  # the table's other rows stay


def test_an_override_value_outside_the_schema_is_an_error_with_the_closest_value() -> None:
    request = read_launch(
        {"task": "t", "coordination_overrides": {"final_answer_strategy": "synthesise"}}
    )
    with pytest.raises(LaunchError, match=r"did you mean 'synthesize'\?"):
        launch_config(RESOLVED, request)


def test_an_override_the_validators_refuse_is_an_error() -> None:
    request = read_launch({"task": "t", "coordination_overrides": {"max_tries_per_round": 0}})
    with pytest.raises(LaunchError, match="max_tries_per_round"):
        launch_config(RESOLVED, request)


def test_an_unknown_override_names_the_setting_meant() -> None:
    request = read_launch({"task": "t", "coordination_overrides": {"visibilty": "ring"}})
    with pytest.raises(LaunchError, match="did you mean 'visibility'"):
        launch_config(RESOLVED, request)


def test_the_interactive_mode_itself_cannot_be_overridden() -> None:
    request = read_launch({"task": "t", "coordination_overrides": {"interactive_mode": {}}})
    with pytest.raises(LaunchError, match="'interactive_mode' is not an orchestrator setting"):
        launch_config(RESOLVED, request)


def test_execute_after_planning_needs_planning_mode() -> None:
    with pytest.raises(LaunchError, match="add 'planning_mode': true"):
        launch_config(RESOLVED, read_launch({"task": "t", "execute_after_planning": True}))
