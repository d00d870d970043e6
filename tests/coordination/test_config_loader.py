"""Loading configs: every error names the file, the field, what was wrong, and the valid
values where there is a fixed set of them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from config.loader import ConfigError, load_config, parse_config
from config.schema import FinalAnswerStrategy, InFlightPolicy, Misbehaviour, OrchestratorConfig

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
            "agents: [{id: a, backend: {type: gemini}}]",
            "backend type 'gemini'",
            "valid backend types: scripted, openai, anthropic",
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
            "'latency' must be from 0 to 3600 seconds; got -1 @ config.agents[0].backend",
        ),
        (
            "agents: [{id: a, backend: {latency: fast}}]",
            "'fast' @ config.agents[0].backend.latency",
        ),
        ("agents: [{id: a, backend: {jitter: 2}}]", "'jitter' must be a number from 0 to 1; got 2"),
        (
            "agents: [{id: a}]\norchestrator: {max_new_answers_per_agent: 0}",
            "'max_new_answers_per_agent' must be a whole number from 1 to 1000, or null; got 0",
        ),
        (
            "agents: [{id: a}]\norchestrator: {run_timeout: -5}",
            "'run_timeout' must be more than 0 and at most 604800 seconds, or null; got -5",
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


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (
            "agents: [{id: a}]\norchestrator: {skip_voting: 'no'}",
            "expected true or false, got 'no' @ config.orchestrator.skip_voting",
        ),
        (
            "agents: [{id: a, backend: {seed: 1.5}}]",
            "expected a whole number, got 1.5 @ config.agents[0].backend.seed",
        ),
        (
            "agents: [{id: a, backend: {seed: true}}]",
            "expected a whole number, got true @ config.agents[0].backend.seed",
        ),
        (
            "agents: [{id: a}]\norchestrator: {max_tries_per_round: 2.0}",
            "expected a whole number, got 2.0 @ config.orchestrator.max_tries_per_round",
        ),
        (
            "agents: [{id: a, backend: {latency: true}}]",
            "expected a number, got true @ config.agents[0].backend.latency",
        ),
        (
            "agents: [{id: a, persona: [careful, kind]}]",
            "expected a string, got a list @ config.agents[0].persona",
        ),
        (
            "agents: [{id: 12}]",
            "expected a string, got 12; quote it to mean the text @ config.agents[0].id",
        ),
    ],
    ids=[
        "string-no-is-not-a-bool",
        "fraction-is-not-whole",
        "bool-is-not-an-int",
        "float-is-not-an-int",
        "bool-is-not-a-number",
        "list-is-not-a-persona",
        "number-is-not-an-id",
    ],
)
def test_types_are_strict(tmp_path: Path, yaml_text: str, expected: str) -> None:
    assert expected in _error(tmp_path, yaml_text)


@pytest.mark.parametrize(
    "field",
    [
        "backend: {latency: VALUE}",
        "backend: {jitter: VALUE}",
        "backend: {error_rate: VALUE}",
        "orchestrator: {run_timeout: VALUE}",
        "orchestrator: {round_timeout: VALUE}",
        "orchestrator: {quiet_period: VALUE}",
    ],
)
@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_number_that_is_not_finite_is_refused(tmp_path: Path, field: str, value: str) -> None:
    section = field.replace("VALUE", value)
    text = (
        f"agents: [{{id: a, {section}}}]"
        if section.startswith("backend")
        else f"agents: [{{id: a}}]\n{section}"
    )
    assert f"expected a finite number, got {value}" in _error(tmp_path, text)


def test_a_config_built_in_code_refuses_a_nan_timeout_too() -> None:
    with pytest.raises(ValueError, match="'run_timeout' must be more than 0"):
        OrchestratorConfig(run_timeout=float("nan"))


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (
            "agents: [{id: a, backend: {answers: 1000000000}}]",
            "'answers' must be a whole number from 1 to 1000; got 1000000000",
        ),
        ("agents: [{id: a, backend: {answers: 1e9}}]", "expected a whole number, got '1e9'"),
        (
            "agents: [{id: a}]\norchestrator: {quiet_period: 1000}",
            "'quiet_period' must be more than 0 and at most 60 seconds, or null; got 1000",
        ),
        (
            "agents: [{id: a, backend: {latency: 100000}}]",
            "'latency' must be from 0 to 3600 seconds; got 100000",
        ),
        (
            "agents: [{id: a}]\norchestrator: {run_timeout: 1.0e+12}",
            "'run_timeout' must be more than 0 and at most 604800 seconds, or null",
        ),
        (
            "agents: [{id: a}]\norchestrator: {round_timeout: 1.0e+12}",
            "'round_timeout' must be more than 0 and at most 604800 seconds, or null",
        ),
        (
            "agents: [{id: a}]\norchestrator: {max_new_answers_per_agent: 1000000}",
            "'max_new_answers_per_agent' must be a whole number from 1 to 1000, or null",
        ),
    ],
    ids=[
        "answers",
        "answers-as-yaml-1e9",
        "quiet-period",
        "latency",
        "run-timeout",
        "round-timeout",
        "answer-cap",
    ],
)
def test_an_unreasonable_value_is_refused_with_its_bound(
    tmp_path: Path, yaml_text: str, expected: str
) -> None:
    assert expected in _error(tmp_path, yaml_text)


ALIAS_BOMB = """\
a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
agents: [{id: a, persona: *i}]
"""


def test_a_yaml_alias_bomb_is_refused_in_well_under_a_second(tmp_path: Path) -> None:
    started = time.perf_counter()
    message = _error(tmp_path, ALIAS_BOMB)
    assert time.perf_counter() - started < 0.5
    assert "its YAML aliases (*name) expand it by more than 100,000 values" in message


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "conclave.yaml"
    path.write_text(
        "defaults: &fast {latency: 0, jitter: 0}\n"
        "agents: [{id: a, backend: *fast}, {id: b, backend: *fast}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="extra fields found \\(defaults\\)"):
        load_config(path)  # the aliases were expanded; only the helper key is unknown


def test_a_yaml_alias_inside_its_own_value_is_refused(tmp_path: Path) -> None:
    assert "a YAML alias refers to a value that contains it" in _error(
        tmp_path, "agents: &loop [{id: a, persona: *loop}]"
    )


def test_yaml_nested_too_deeply_is_refused_naming_the_limit(tmp_path: Path) -> None:
    depth = 100_000  # past Python's recursion limit, which PyYAML's composer would hit
    message = _error(tmp_path, "agents: " + "[" * depth + "]" * depth)
    assert "YAML nested more than 64 levels deep" in message


def test_a_config_that_is_not_utf8_names_the_byte_and_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"agents:\n  - id: a\n    persona: caf\xe9 owner\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: byte 0xe9 at position 34 (line 3, column 17) is not valid UTF-8; "
        "save the file as UTF-8"
    )


def test_a_config_larger_than_16_mib_is_refused_without_reading_it_all() -> None:
    with pytest.raises(ConfigError, match="/dev/zero is larger than 16 MiB"):
        load_config("/dev/zero")
