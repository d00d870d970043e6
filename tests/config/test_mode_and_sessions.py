"""The config's top-level ``mode:`` and its ``sessions`` section: read, defaulted, and refused
with line, column and the valid values like every other field."""

from __future__ import annotations

import pytest

from conclave.config.loader import read_config_text
from conclave.config.problems import ConfigError
from conclave.config.schema.modes import CollaborationMode

AGENTS = "agents:\n  - id: a\n"


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        read_config_text(text, source="c.yaml", environ={})
    return [p.render() for p in raised.value.problems]


def test_mode_sets_the_starting_collaboration_mode() -> None:
    loaded = read_config_text(AGENTS + "mode: plan\n", source="c.yaml", environ={})
    assert loaded.config.mode is CollaborationMode.PLAN


def test_without_mode_the_config_names_none() -> None:
    assert read_config_text(AGENTS, source="c.yaml", environ={}).config.mode is None


def test_an_invalid_mode_is_a_config_error_at_its_line_and_column_with_the_valid_values() -> None:
    [problem] = _problems(AGENTS + "mode: plna\n")
    assert problem.startswith("c.yaml:3:7: mode: ")
    assert "default, plan, execute" in problem
    assert "did you mean 'plan'" in problem


def test_sessions_are_kept_thirty_days_by_default() -> None:
    config = read_config_text(AGENTS, source="c.yaml", environ={}).config
    assert config.sessions.retention_days == 30


def test_retention_may_be_null_to_keep_sessions_forever() -> None:
    text = AGENTS + "sessions:\n  retention_days: null\n"
    assert (
        read_config_text(text, source="c.yaml", environ={}).config.sessions.retention_days is None
    )


def test_a_retention_of_zero_days_is_refused_with_the_range() -> None:
    [problem] = _problems(AGENTS + "sessions:\n  retention_days: 0\n")
    assert problem.startswith("c.yaml:4:19: sessions.retention_days: ")
    assert "from 1 to 36500, or null" in problem


def test_an_unknown_key_in_sessions_is_refused_with_the_closest() -> None:
    [problem] = _problems(AGENTS + "sessions:\n  retention_day: 3\n")
    assert "did you mean 'retention_days'" in problem
