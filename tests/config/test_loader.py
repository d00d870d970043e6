"""Loading a config file: every problem in one pass, each with the file, line, column, field
path, what was expected and got, and the closest valid spelling; ``${VAR}`` interpolation;
old key names that still load with a warning."""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from conclave.config.loader import (
    ConfigError,
    LoadedConfig,
    compose_yaml,
    parse_config,
    read_config,
    read_config_text,
)
from conclave.config.problems import Problem
from conclave.config.schema import ConclaveConfig, OrchestratorConfig
from conclave.config.schema.openai import MaxTokensParam, OpenAIBackendConfig, ReasoningEffort
from conclave.config.secret import Secret
from conclave.config.walker import INVALID, SchemaWalker, supports

SOURCE = "conclave.yaml"


def _load(text: str, env: Mapping[str, str] | None = None) -> LoadedConfig:
    return read_config_text(text, source=SOURCE, environ=env or {})


def _problems(text: str, env: Mapping[str, str] | None = None) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        _load(text, env)
    return list(caught.value.problems)


def _one(text: str, env: Mapping[str, str] | None = None) -> Problem:
    found = _problems(text, env)
    assert len(found) == 1, found
    return found[0]


BAD = """\
agents:
  - id: a
    backend: {type: opnai, model: m}
  - id: b
    persna: a careful engineer
    backend:
      type: openai
      model: gpt-test
      temperature: 5
      reasoning_effort: hihg
orchestrator:
  final_answer_strategy: synthesise
  colour: red
"""


def test_every_problem_is_reported_at_once_one_per_line_with_line_column_and_path() -> None:
    with pytest.raises(ConfigError) as caught:
        _load(BAD)
    assert str(caught.value).splitlines() == [
        "conclave.yaml:3:21: agents[0].backend.type: backend type 'opnai' is not available; "
        "valid backend types: scripted, openai, anthropic; did you mean 'openai'?",
        "conclave.yaml:5:5: agents[1].persna: unknown key 'persna' in agents[1]; correct its "
        "spelling, or remove it; did you mean 'persona'?",
        "conclave.yaml:9:20: agents[1].backend.temperature: 'temperature' must be a number "
        "from 0 to 2; got 5.0",
        "conclave.yaml:10:25: agents[1].backend.reasoning_effort: reasoning_effort 'hihg' is "
        "not one of: none, minimal, low, medium, high, xhigh; did you mean 'high'?",
        "conclave.yaml:12:26: orchestrator.final_answer_strategy: final_answer_strategy "
        "'synthesise' is not one of: winner_reuse, winner_present, synthesize; did you mean "
        "'synthesize'?",
        "conclave.yaml:13:3: orchestrator.colour: unknown key 'colour' in orchestrator; valid "
        "keys: " + ", ".join(f.name for f in attrs.fields(OrchestratorConfig)) + ", or remove it",
    ]


def test_a_problem_carries_expected_got_and_suggestion_apart() -> None:
    problem = _problems(BAD)[0]
    assert problem.to_json() == {
        "file": "conclave.yaml",
        "line": 3,
        "column": 21,
        "path": "agents[0].backend.type",
        "message": "backend type 'opnai' is not available; valid backend types: scripted, "
        "openai, anthropic",
        "expected": "one of: scripted, openai, anthropic",
        "got": "opnai",
        "suggestion": "openai",
    }


def test_a_validator_refusal_says_what_was_expected() -> None:
    problem = _one("agents: [{id: a, backend: {latency: -1}}]")
    assert problem.path == "agents[0].backend.latency"
    assert problem.expected == "from 0 to 3600 seconds"
    assert problem.got == "-1"


def test_every_refused_value_of_one_section_is_reported() -> None:
    found = _problems("agents: [{id: a, backend: {latency: -1, jitter: 2, error_rate: 3}}]")
    assert [p.path for p in found] == [
        "agents[0].backend.latency",
        "agents[0].backend.jitter",
        "agents[0].backend.error_rate",
    ]


def test_a_value_of_the_wrong_type_does_not_hide_its_neighbours_problems() -> None:
    found = _problems("agents: [{id: a, backend: {seed: 1.5, jitter: 2}}]")
    assert [p.message for p in found] == [
        "expected a whole number, got 1.5",
        "'jitter' must be a number from 0 to 1; got 2",
    ]


def test_problems_in_different_agents_are_all_reported() -> None:
    found = _problems("agents:\n  - {id: 'bad id!'}\n  - {id: b, backend: {answers: 0}}\n")
    assert [(p.line, p.path) for p in found] == [
        (2, "agents[0].id"),
        (3, "agents[1].backend.answers"),
    ]


@pytest.mark.parametrize(
    ("section", "path", "valid", "suggestion"),
    [
        ("{reasoning_effort: hgh}", "reasoning_effort", ReasoningEffort, "high"),
        ("{max_tokens_param: max_token}", "max_tokens_param", MaxTokensParam, "max_tokens"),
    ],
)
def test_an_openai_enum_lists_its_valid_values_and_the_closest(
    section: str, path: str, valid: Any, suggestion: str
) -> None:
    settings = section[1:-1]
    problem = _one(f"agents: [{{id: a, backend: {{type: openai, model: m, {settings}}}}}]")
    assert problem.path == f"agents[0].backend.{path}"
    assert f"is not one of: {', '.join(m.value for m in valid)}" in problem.message
    assert problem.suggestion == suggestion


def test_a_value_far_from_every_valid_one_gets_no_suggestion() -> None:
    problem = _one("agents: [{id: a}]\norchestrator: {in_flight_policy: later}")
    assert problem.suggestion is None
    assert problem.message == "in_flight_policy 'later' is not one of: cancel, finish, inject"


def test_an_unknown_key_close_to_a_valid_one_suggests_it() -> None:
    problem = _one("agents: [{id: a, backend: {type: openai, model: m, max_concurency: 3}}]")
    assert problem.path == "agents[0].backend.max_concurency"
    assert problem.suggestion == "max_concurrency"
    assert problem.render().endswith("did you mean 'max_concurrency'?")


def test_a_misspelt_key_in_another_case_is_suggested() -> None:
    assert _one("agents: [{id: a, Persona: careful}]").suggestion == "persona"


def test_a_missing_required_key_names_it_at_its_section() -> None:
    problem = _one("agents:\n  - id: a\n    backend: {type: openai}\n")
    assert (problem.line, problem.column, problem.path) == (3, 14, "agents[0].backend.model")
    assert problem.message == "the required key 'model' is missing; add it to this mapping"


def test_a_config_without_agents_says_the_key_is_missing() -> None:
    problem = _one("orchestrator: {}")
    assert problem.path == "agents"
    assert "the required key 'agents' is missing" in problem.message


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (
            "agents: [{id: a}]\norchestrator: {skip_voting: 'no'}",
            "orchestrator.skip_voting",
            "expected true or false, got 'no'",
        ),
        (
            "agents: [{id: a, backend: {seed: true}}]",
            "agents[0].backend.seed",
            "expected a whole number, got true",
        ),
        (
            "agents: [{id: a}]\norchestrator: {max_tries_per_round: 2.0}",
            "orchestrator.max_tries_per_round",
            "expected a whole number, got 2.0",
        ),
        (
            "agents: [{id: a, backend: {latency: true}}]",
            "agents[0].backend.latency",
            "expected a number, got true",
        ),
        (
            "agents: [{id: a, persona: [careful, kind]}]",
            "agents[0].persona",
            "expected a string, got a list",
        ),
        (
            "agents: [{id: 12}]",
            "agents[0].id",
            "expected a string, got 12; quote it to mean the text",
        ),
        (
            "agents: [{id: a, backend: {answers: 1e9}}]",
            "agents[0].backend.answers",
            "expected a whole number, got '1e9'",
        ),
        (
            "agents: [{id: a, backend: {latency: .nan}}]",
            "agents[0].backend.latency",
            "expected a finite number, got .nan",
        ),
        (
            "agents: [{id: a}]\norchestrator: {run_timeout: .inf}",
            "orchestrator.run_timeout",
            "expected a finite number, got .inf",
        ),
        ("agents: everyone", "agents", "expected a list, got 'everyone'"),
        (
            "agents: [scripted]",
            "agents[0]",
            "expected a mapping (keys: id, persona, system_prompt, backend, mcp_servers, loop, "
            "paor), got 'scripted'",
        ),
        (
            "agents: [{id: a, backend: scripted}]",
            "agents[0].backend",
            "expected a mapping such as {type: scripted, ...}, got 'scripted'",
        ),
        (
            "agents: [{id: a, backend: {type: openai, model: m, extra_headers: {X-A: 1}}}]",
            "agents[0].backend.extra_headers.X-A",
            "expected a string, got 1; quote it to mean the text",
        ),
        ("agents: [{id: a}, {id: a}]", "agents", "agent id 'a' appears twice; ids must be unique"),
        ("agents: []", "agents", "agents must list at least one agent"),
    ],
)
def test_a_wrong_value_names_the_field_what_was_expected_and_what_was_got(
    text: str, path: str, message: str
) -> None:
    problem = _one(text)
    assert (problem.path, problem.message) == (path, message)


def test_a_file_that_is_not_a_mapping_says_what_a_config_is() -> None:
    problem = _one("- a\n- b\n")
    assert problem.message == (
        "expected a mapping with an 'agents' list, got a list (see config/examples/)"
    )


def test_an_empty_file_says_what_a_config_is() -> None:
    assert _one("").render() == (
        "conclave.yaml: the file is empty; a config is a mapping with an 'agents' list "
        "(see config/examples/)"
    )


def test_invalid_yaml_names_the_line_and_column() -> None:
    problem = _one("agents:\n  - id: a\n    persona: [unclosed\n")
    assert (problem.file, problem.line) == (SOURCE, 4)
    assert problem.message.startswith("this file is not valid YAML: ")


def test_a_key_written_twice_is_a_problem_at_the_second() -> None:
    problem = _one("agents:\n  - id: a\n    id: b\n")
    assert (problem.line, problem.path) == (3, "agents[0].id")
    assert "appears twice in this mapping (first on line 2)" in problem.message


def test_merge_keys_apply_and_an_explicit_key_overrides_a_merged_one() -> None:
    loaded = _load(
        "agents:\n"
        "  - &base {id: a, persona: careful, backend: {latency: 0}}\n"
        "  - <<: *base\n"
        "    id: b\n"
    )
    assert [(a.id, a.persona) for a in loaded.config.agents] == [("a", "careful"), ("b", "careful")]


def test_system_prompt_loads_and_defaults_to_empty() -> None:
    loaded = _load("agents: [{id: a, system_prompt: Answer in French.}, {id: b}]")
    assert [a.system_prompt for a in loaded.config.agents] == ["Answer in French.", ""]


# -- interpolation --------------------------------------------------------------------------


def test_values_are_interpolated_from_the_environment() -> None:
    loaded = _load(
        "agents: [{id: a, backend: {type: openai, model: '${MODEL}', base_url: "
        "'${BASE:-http://localhost:11434/v1}'}}]",
        env={"MODEL": "llama3"},
    )
    backend = loaded.config.agents[0].backend
    assert isinstance(backend, OpenAIBackendConfig)
    assert (backend.model, backend.base_url) == ("llama3", "http://localhost:11434/v1")


def test_an_unquoted_reference_takes_the_type_its_value_has_in_yaml() -> None:
    loaded = _load(
        "agents:\n"
        "  - id: a\n"
        "    backend:\n"
        "      type: openai\n"
        "      model: m\n"
        "      max_concurrency: ${N:-4}\n"
        "      stream_usage: ${USAGE}\n",
        env={"USAGE": "false"},
    )
    backend = loaded.config.agents[0].backend
    assert isinstance(backend, OpenAIBackendConfig)
    assert (backend.max_concurrency, backend.stream_usage) == (4, False)


def test_a_quoted_reference_stays_text() -> None:
    problem = _one("agents: [{id: a, backend: {seed: '${SEED:-4}'}}]")
    assert problem.message == "expected a whole number, got '4'"


def test_a_missing_variable_names_it_and_the_field() -> None:
    problem = _one("agents: [{id: a, backend: {type: openai, model: m, api_key: '${MY_KEY}'}}]")
    assert problem.path == "agents[0].backend.api_key"
    assert problem.message.startswith("${MY_KEY} names an environment variable that is not set")
    assert problem.expected == "MY_KEY set in the environment"


def test_a_key_from_the_environment_is_a_secret() -> None:
    key = "sk-from-env-0123456789"
    loaded = _load(
        "agents: [{id: a, backend: {type: openai, model: m, api_key: '${K}'}}]", env={"K": key}
    )
    backend = loaded.config.agents[0].backend
    assert isinstance(backend, OpenAIBackendConfig)
    assert backend.api_key == Secret(key)


def test_double_dollar_brace_in_a_value_is_a_literal() -> None:
    loaded = _load("agents: [{id: a, persona: 'costs $${PRICE}'}]")
    assert loaded.config.agents[0].persona == "costs ${PRICE}"


def test_a_key_is_never_shown_in_a_problem() -> None:
    for text in (
        "agents: [{id: a, backend: {type: openai, model: m, api_key: 123456789012}}]",
        "agents: [{id: a, backend: {type: openai, model: m, api_key: 'sk-123456${oops'}}]",
    ):
        problem = _one(text)
        assert "123456" not in problem.render()
        assert "123456" not in str(problem.to_json())
        assert problem.got == "********"


def test_yaml_files_are_read_with_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONCLAVE_TEST_PERSONA", "a patient teacher")
    path = tmp_path / "c.yaml"
    path.write_text("agents: [{id: a, persona: '${CONCLAVE_TEST_PERSONA}'}]", encoding="utf-8")
    assert read_config(path).config.agents[0].persona == "a patient teacher"


# -- old names ------------------------------------------------------------------------------


def test_round_timeout_still_loads_as_call_timeout_with_a_warning() -> None:
    loaded = _load("agents: [{id: a}]\norchestrator:\n  round_timeout: 30\n")
    assert loaded.config.orchestrator.call_timeout == 30.0
    (warning,) = loaded.warnings
    assert (warning.line, warning.path) == (3, "orchestrator.round_timeout")
    assert warning.message == (
        "'round_timeout' is the old name of 'call_timeout'; rename it (the old name still "
        "works, for now)"
    )


def test_round_timeout_and_call_timeout_together_are_refused() -> None:
    problem = _one("agents: [{id: a}]\norchestrator: {round_timeout: 30, call_timeout: 60}")
    assert problem.message == (
        "'round_timeout' is the old name of 'call_timeout', which is also given; remove "
        "'round_timeout'"
    )


def test_a_config_without_old_names_loads_without_warnings() -> None:
    assert _load("agents: [{id: a}]\norchestrator: {call_timeout: 30}").warnings == ()


# -- Python data and the schema -------------------------------------------------------------


def test_parse_config_holds_python_data_to_the_same_checks_without_lines() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"agents": [{"id": "a", "backend": {"type": "opnai"}}]})
    (problem,) = caught.value.problems
    assert problem.render() == (
        "config: agents[0].backend.type: backend type 'opnai' is not available; valid "
        "backend types: scripted, openai, anthropic; did you mean 'openai'?"
    )
    assert problem.line is None


def test_parse_config_does_not_interpolate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X", "replaced")
    assert parse_config({"agents": [{"id": "a", "persona": "${X}"}]}).agents[0].persona == "${X}"


def _schema_fields(cls: Any) -> Iterator[tuple[str, Any]]:
    seen: set[Any] = set()
    stack = [cls]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for field in attrs.fields(attrs.resolve_types(current)):
            yield f"{current.__name__}.{field.name}", field.type
            stack.extend(_sections(field.type))


def _sections(tp: Any) -> list[Any]:
    if attrs.has(tp):
        return [tp]
    return [s for arg in typing.get_args(tp) for s in _sections(arg)]


def test_the_walker_can_check_every_field_of_the_schema() -> None:
    unsupported = [name for name, tp in _schema_fields(ConclaveConfig) if not supports(tp)]
    assert unsupported == []


def test_an_empty_path_is_refused_not_taken_as_the_current_directory() -> None:
    problem = _one("agents: [{id: a}]\norchestrator:\n  context_paths:\n    - path: ''\n")
    assert (problem.line, problem.path) == (4, "orchestrator.context_paths[0].path")
    assert problem.message == "expected a path, such as ./src, got ''"


def _fahrenheit(value: float) -> float:
    if value < -459.67:
        raise ValueError(f"{value} is below absolute zero")
    return (value - 32) / 1.8


@attrs.frozen(kw_only=True)
class _Thermostat:
    celsius: float = attrs.field(converter=_fahrenheit)
    step: int = 1


def test_a_converter_refusal_is_a_problem_at_its_field() -> None:
    walker = SchemaWalker(source="t.yaml", environ={})
    node = compose_yaml("celsius: -500\nstep: 1.5\n", source="t.yaml")
    assert node is not None
    assert walker.walk(node, _Thermostat, "") is INVALID
    assert sorted((p.line, p.path, p.message) for p in walker.errors) == [
        (1, "celsius", "-500.0 is below absolute zero"),
        (2, "step", "expected a whole number, got 1.5"),
    ]


def test_a_converted_field_gets_its_converted_value() -> None:
    walker = SchemaWalker(source="t.yaml", environ={})
    node = compose_yaml("celsius: 212\n", source="t.yaml")
    assert node is not None
    assert walker.walk(node, _Thermostat, "") == _Thermostat(celsius=212)


def test_a_section_refusing_itself_as_a_whole_is_a_problem_at_the_section(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing"
    problem = _one(f"agents: [{{id: a}}]\norchestrator:\n  context_paths:\n    - path: {missing}\n")
    assert (problem.line, problem.path) == (4, "orchestrator.context_paths[0]")
    assert problem.message.startswith(f"context path '{missing}' does not exist")


def test_parse_config_refuses_what_is_not_plain_data() -> None:
    with pytest.raises(ConfigError, match="a config is plain data"):
        parse_config({"agents": [{"id": "a", "persona": object()}]})


def test_the_walker_refuses_to_guess_at_a_type_it_does_not_know() -> None:
    @attrs.frozen
    class Odd:
        when: complex

    node = compose_yaml("when: 1\n")
    assert node is not None
    with pytest.raises(TypeError, match=r"cannot check a field of type .*complex.* \(when\)"):
        SchemaWalker(source=None, environ=None).walk(node, Odd, "")


def test_without_libyaml_the_pure_python_composer_finds_the_same_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = [(p.line, p.column, p.path) for p in _problems(BAD)]
    monkeypatch.setattr("conclave.config.loader._FAST_LOADER", None)
    assert [(p.line, p.column, p.path) for p in _problems(BAD)] == fast


def test_without_libyaml_deep_nesting_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("conclave.config.loader._FAST_LOADER", None)
    problem = _one("agents: " + "[" * 100 + "]" * 100)
    assert "YAML nested more than 64 levels deep" in problem.message


def test_a_key_that_is_empty_is_refused() -> None:
    problem = _one(
        "agents: [{id: a, backend: {type: openai, model: m, api_key: '${K}'}}]", env={"K": ""}
    )
    assert problem.path == "agents[0].backend.api_key"
    assert problem.message.startswith("'api_key' is empty; set the key")
    assert problem.got == "********"


def test_an_unquoted_reference_to_nothing_is_null() -> None:
    loaded = _load(
        "agents:\n  - id: a\n    backend:\n      type: openai\n      model: m\n"
        "      api_key: ${K:-}\n"
    )
    backend = loaded.config.agents[0].backend
    assert isinstance(backend, OpenAIBackendConfig)
    assert backend.api_key is None


def test_a_base_url_carrying_a_user_and_password_is_refused_without_echoing_them() -> None:
    problem = _one(
        "agents: [{id: a, backend: {type: openai, model: m, "
        "base_url: 'https://me:hunter2@example.com/v1'}}]"
    )
    assert problem.message == (
        "'base_url' must not carry a user name or password (user:password@host): give the key "
        "as api_key or api_key_env, and the URL without them"
    )
    assert "hunter2" not in problem.render()
