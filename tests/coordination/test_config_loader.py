"""Loading configs: every error names the file, the field, what was wrong, and the valid
values where there is a fixed set of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, load_config, parse_config
from config.schema import FinalAnswerStrategy, InFlightPolicy, Misbehaviour

EXAMPLE = Path(__file__).parents[2] / "config" / "examples" / "three_scripted.yaml"


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "conclave.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    return message


def test_the_example_config_loads() -> None:
    cfg = load_config(EXAMPLE)
    assert [a.id for a in cfg.agents] == ["engineer", "product", "reviewer"]
    assert cfg.orchestrator.final_answer_strategy is FinalAnswerStrategy.WINNER_PRESENT


def test_a_minimal_config_gets_scripted_defaults() -> None:
    cfg = parse_config({"agents": [{"id": "solo"}]})
    assert cfg.agents[0].backend.type == "scripted"
    assert cfg.orchestrator.in_flight_policy is InFlightPolicy.FINISH


@pytest.mark.parametrize(
    ("yaml_text", "field", "valid"),
    [
        (
            "agents: [{id: a}]\norchestrator: {final_answer_strategy: best}",
            "config.orchestrator.final_answer_strategy",
            "valid values: winner_reuse, winner_present, synthesize",
        ),
        (
            "agents: [{id: a}]\norchestrator: {in_flight_policy: later}",
            "config.orchestrator.in_flight_policy",
            "valid values: cancel, finish",
        ),
        (
            "agents: [{id: a, backend: {misbehave: sulk}}]",
            "config.agents[0].backend.misbehave",
            "valid values: " + ", ".join(m.value for m in Misbehaviour),
        ),
        (
            "agents: [{id: a}]\norchestrator: {visibility: star}",
            "visibility 'star'",
            "all, ring, islands:K",
        ),
        (
            "agents: [{id: a, backend: {type: openai}}]",
            "backend type 'openai'",
            "valid backend types: scripted",
        ),
        (
            "agents: [{id: a, backend: {vote: favourite}}]",
            "vote 'favourite'",
            "best, self, or an anonymous id such as agent2",
        ),
    ],
    ids=["strategy", "in-flight-policy", "misbehave", "visibility", "backend-type", "vote"],
)
def test_a_value_outside_a_fixed_set_names_the_field_and_the_valid_values(
    tmp_path: Path, yaml_text: str, field: str, valid: str
) -> None:
    message = _error(tmp_path, yaml_text)
    assert field in message
    assert valid in message


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (
            "agents: [{id: a}]\norchestrator: {colour: red}",
            "extra fields found (colour) @ config.orchestrator",
        ),
        (
            "agents: [{id: a, backend: {latency: -1}}]",
            "'latency' must be >= 0.0: -1.0 @ config.agents[0].backend",
        ),
        (
            "agents: [{id: a, backend: {latency: fast}}]",
            "'fast' @ config.agents[0].backend.latency",
        ),
        ("agents: [{id: a, backend: {jitter: 2}}]", "'jitter' must be <= 1.0: 2.0"),
        (
            "agents: [{id: a}]\norchestrator: {max_new_answers_per_agent: 0}",
            "'max_new_answers_per_agent' must be >= 1: 0",
        ),
        (
            "agents: [{id: a}]\norchestrator: {run_timeout: -5}",
            "'run_timeout' must be > 0 seconds or null, got -5",
        ),
        ("agents: [{id: a}, {id: a}]", "agent id 'a' appears twice; ids must be unique"),
        ("agents: []", "agents must list at least one agent"),
        ("agents: [{id: 'bad id!'}]", "agent id 'bad id!' must be 1-64 letters, digits"),
        ("agents: [{persona: nameless}]", "required field missing @ config.agents[0].id"),
        ("orchestrator: {}", "required field missing @ config.agents"),
    ],
    ids=[
        "unknown-key",
        "negative-latency",
        "latency-not-a-number",
        "jitter-above-one",
        "cap-zero",
        "negative-timeout",
        "duplicate-ids",
        "no-agents",
        "bad-id",
        "missing-id",
        "missing-agents",
    ],
)
def test_a_wrong_value_names_the_field_and_what_is_wrong(
    tmp_path: Path, yaml_text: str, expected: str
) -> None:
    message = _error(tmp_path, yaml_text)
    assert expected in message
    assert "unknown error" not in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        "agents: [{id: a}]\norchestrator: {final_answer_strategy: best, in_flight_policy: later}",
    )
    assert "final_answer_strategy" in message
    assert "in_flight_policy" in message


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("- a\n- b\n", "expected a mapping with an 'agents' list, got list"),
        ("agents: everyone", "agents must be a list of agents, got str"),
        (
            "agents: [{id: a, backend: scripted}]",
            "expected a mapping (keys: type, seed, latency,",
        ),
        (
            "agents: [scripted]",
            "expected a mapping (keys: id, persona, backend) @ config.agents[0]",
        ),
    ],
    ids=["top-level-list", "agents-not-a-list", "backend-not-a-mapping", "agent-not-a-mapping"],
)
def test_the_wrong_shape_says_what_shape_was_expected(
    tmp_path: Path, yaml_text: str, expected: str
) -> None:
    message = _error(tmp_path, yaml_text)
    assert expected in message
    assert "unknown error" not in message


def test_invalid_yaml_says_so(tmp_path: Path) -> None:
    assert "is not valid YAML" in _error(tmp_path, "agents: [{id: a")


def test_a_missing_file_says_it_cannot_be_read(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(missing)
    assert str(caught.value) == f"cannot read config {missing}: No such file or directory"
