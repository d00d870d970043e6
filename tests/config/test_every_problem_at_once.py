"""A config with a problem in one section is still checked across the others: one pass
names every problem, each at its line and column (issue 23)."""

from __future__ import annotations

import pytest

from conclave.config.loader import parse_config, read_config_text
from conclave.config.problems import ConfigError, Problem

_UNSET_KEY_AND_DUPLICATE_ID = """\
agents:
  - id: a
    backend:
      type: openai
      model: gpt-4o
      api_key: ${UNSET_KEY}
  - id: a
"""


def _problems(text: str) -> tuple[Problem, ...]:
    with pytest.raises(ConfigError) as raised:
        read_config_text(text, source="c.yaml", environ={})
    return raised.value.problems


def test_an_unset_variable_does_not_hide_a_duplicate_agent_id() -> None:
    found = _problems(_UNSET_KEY_AND_DUPLICATE_ID)
    assert [(p.path, p.line, p.column) for p in found] == [
        ("agents[0].backend.api_key", 6, 16),
        ("agents[1].id", 7, 9),
    ]


def test_a_duplicate_id_names_what_was_expected_what_was_got_and_where_the_first_is() -> None:
    duplicate = _problems(_UNSET_KEY_AND_DUPLICATE_ID)[1]
    assert duplicate.file == "c.yaml"
    assert duplicate.expected == "an id no other agent has"
    assert duplicate.got == "a"
    assert "(first on line 2)" in duplicate.message
    assert "rename one" in duplicate.message


def test_a_duplicate_agent_id_is_reported_when_another_agent_is_invalid() -> None:
    found = _problems("agents:\n  - id: a\n  - id: a\n  - id: b\n    persona: [not, text]\n")
    assert [(p.path, p.line) for p in found] == [("agents[1].id", 3), ("agents[2].persona", 5)]


def test_an_invalid_agent_that_repeats_an_id_is_reported_as_a_duplicate_too() -> None:
    found = _problems("agents:\n  - id: a\n  - id: a\n    persona: [not, text]\n")
    assert [p.path for p in found] == ["agents[1].id", "agents[1].persona"]


def test_an_unset_variable_does_not_hide_a_vote_for_an_agent_the_run_lacks() -> None:
    found = _problems(
        "agents:\n"
        "  - id: a\n"
        "    persona: ${UNSET_PERSONA}\n"
        "  - id: b\n"
        "    backend: {type: scripted, vote: agent9}\n"
    )
    assert [p.path for p in found] == ["agents[0].persona", "agents[1].backend.vote"]
    assert "the run has 2 agents" in found[1].message


def test_an_unread_visibility_is_left_unchecked_not_guessed() -> None:
    agents = "".join(f"  - id: s{i}\n" for i in range(300))
    found = _problems(
        f"agents:\n{agents}  - id: x\n    persona: ${{UNSET_P}}\n"
        "orchestrator:\n  visibility: ${UNSET_V}\n"
    )
    assert [p.path for p in found] == ["agents[300].persona", "orchestrator.visibility"]
    assert "not set" in found[1].message


def test_an_unset_variable_does_not_hide_an_all_to_all_visibility_with_too_many_agents() -> None:
    agents = "".join(f"  - id: s{i}\n" for i in range(300))
    found = _problems(f"agents:\n{agents}  - id: x\n    persona: ${{UNSET_PERSONA}}\n")
    assert [p.path for p in found] == ["agents[300].persona", "orchestrator.visibility"]
    assert "301 agents is all-to-all" in found[1].message


def test_a_duplicate_among_valid_agents_is_reported_once() -> None:
    found = _problems("agents:\n  - id: a\n  - id: a\norchestrator:\n  quiet_period: ${UNSET_Q}\n")
    assert [p.path for p in found] == ["agents", "orchestrator.quiet_period"]


def test_python_data_gets_the_same_duplicate_check_without_lines() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"agents": [{"id": "a"}, {"id": "a", "persona": ["not", "text"]}]})
    problems = {p.path: p for p in raised.value.problems}
    assert set(problems) == {"agents[1].id", "agents[1].persona"}
    duplicate = problems["agents[1].id"]
    assert duplicate.line is None
    assert duplicate.message.startswith("agent id 'a' appears twice; ids must be unique")


def test_an_invalid_agent_does_not_hide_an_mcp_server_named_like_a_top_level_one() -> None:
    found = _problems(
        "mcp_servers:\n"
        "  - {name: fs, command: mcp-fs}\n"
        "agents:\n"
        "  - id: a\n"
        "    mcp_servers:\n"
        "      - {name: fs, command: other-fs}\n"
        "  - id: b\n"
        "    persona: [not, text]\n"
    )
    assert [(p.path, p.line, p.column) for p in found] == [
        ("agents[0].mcp_servers[0]", 6, 9),
        ("agents[1].persona", 8, 14),
    ]
    assert found[0].got == "fs"
    assert "rename one of them" in found[0].message
