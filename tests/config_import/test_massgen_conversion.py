"""Converting MassGen configs (config/massgen.py): what each documented MassGen key becomes,
and a note for every key that changed meaning or was dropped. The inputs are written from
MassGen's documented YAML schema (tests/config_import/massgen/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.config.massgen import (
    AZURE_API_VERSION,
    Conversion,
    MassGenError,
    NoteKind,
    convert_massgen,
)

CONFIGS = Path(__file__).parent / "massgen"


def _load(name: str) -> Any:
    return yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8"))


def _backend(kind: str, **fields: Any) -> dict[str, Any]:
    """The converted backend of one agent whose MassGen backend is ``kind`` with ``fields``."""
    data = {"agents": [{"id": "a", "backend": {"type": kind, "model": "m", **fields}}]}
    backend: dict[str, Any] = convert_massgen(data).config["agents"][0]["backend"]
    return backend


def _notes(conversion: Conversion, kind: NoteKind) -> dict[str, str]:
    return {n.path: n.message for n in conversion.notes if n.kind is kind}


def test_a_single_agent_becomes_a_list_of_one() -> None:
    config = convert_massgen(_load("single_agent.yaml")).config

    assert [a["id"] for a in config["agents"]] == ["my_agent"]


def test_system_message_becomes_system_prompt_and_says_so() -> None:
    conversion = convert_massgen(_load("single_agent.yaml"))

    assert conversion.config["agents"][0]["system_prompt"] == "You are a helpful assistant"
    assert "system_prompt" in _notes(conversion, NoteKind.CHANGED)["agent.system_message"]


@pytest.mark.parametrize(
    ("kind", "base_url", "key_env"),
    [
        ("vllm", "http://localhost:8000/v1", "VLLM_API_KEY"),
        ("sglang", "http://localhost:30000/v1", "SGLANG_API_KEY"),
        ("lmstudio", "http://localhost:1234/v1", "LMSTUDIO_API_KEY"),
        ("grok", "https://api.x.ai/v1", "XAI_API_KEY"),
        ("zai", "https://api.z.ai/api/paas/v4", "ZAI_API_KEY"),
        ("gemini", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY"),
    ],
)
def test_openai_protocol_types_become_openai_at_the_providers_url_with_its_key_variable(
    kind: str, base_url: str, key_env: str
) -> None:
    backend = _backend(kind)

    assert backend["type"] == "openai"
    assert backend["base_url"] == base_url
    assert backend["api_key_env"] == key_env


def test_a_base_url_in_the_massgen_config_wins_over_the_providers_default() -> None:
    assert _backend("vllm", base_url="http://gpu-box:9000/v1")["base_url"] == (
        "http://gpu-box:9000/v1"
    )


@pytest.mark.parametrize(
    ("base_url", "key_env"),
    [
        ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ("https://llm.example.com/v1", "OPENAI_API_KEY"),
    ],
)
def test_chatcompletion_takes_the_key_variable_of_the_provider_at_its_base_url(
    base_url: str, key_env: str
) -> None:
    backend = _backend("chatcompletion", base_url=base_url)

    assert backend["base_url"] == base_url
    assert backend["api_key_env"] == key_env


def test_massgens_openai_type_becomes_openai_saying_it_was_the_responses_api() -> None:
    data = {"agent": {"id": "a", "backend": {"type": "openai", "model": "m"}}}
    conversion = convert_massgen(data)

    assert conversion.config["agents"][0]["backend"] == {"type": "openai", "model": "m"}
    assert "Responses API" in _notes(conversion, NoteKind.CHANGED)["agent.backend.type"]


def test_claude_becomes_anthropic() -> None:
    assert _backend("claude") == {"type": "anthropic", "model": "m"}


def test_azure_openai_carries_the_api_version_and_names_the_model_as_deployment() -> None:
    backend = _backend("azure_openai", base_url="https://me.openai.azure.com/", api_version="v1")

    assert backend["api_version"] == "v1"
    assert backend["deployment"] == "m"
    assert backend["api_key_env"] == "AZURE_OPENAI_API_KEY"


def test_azure_openai_without_an_api_version_gets_massgens_default() -> None:
    backend = _backend("azure_openai", base_url="https://me.openai.azure.com/")

    assert backend["api_version"] == AZURE_API_VERSION


def test_max_tokens_becomes_max_output_tokens() -> None:
    assert _backend("claude", max_tokens=4096)["max_output_tokens"] == 4096


def test_compatible_servers_keep_receiving_max_tokens_by_that_name() -> None:
    assert _backend("vllm", max_tokens=512)["max_tokens_param"] == "max_tokens"


def test_openais_own_api_keeps_the_current_name_for_the_token_limit() -> None:
    assert "max_tokens_param" not in _backend("openai", max_tokens=512)


def test_an_api_key_from_the_environment_becomes_api_key_env_and_no_key_is_written() -> None:
    backend = _backend("grok", api_key="${MY_XAI_KEY}")

    assert backend["api_key_env"] == "MY_XAI_KEY"
    assert "api_key" not in backend


def test_a_key_written_in_the_file_is_carried_with_advice_to_use_a_variable() -> None:
    conversion = convert_massgen(
        {"agent": {"id": "a", "backend": {"type": "claude", "model": "m", "api_key": "k-1"}}}
    )

    assert conversion.config["agents"][0]["backend"]["api_key"] == "k-1"
    assert "${VAR}" in _notes(conversion, NoteKind.CHANGED)["agent.backend.api_key"]


def test_reasoning_effort_is_carried_over() -> None:
    assert _backend("openai", reasoning={"effort": "high"})["reasoning_effort"] == "high"


def test_sampling_parameters_pass_through_in_extra_body() -> None:
    assert _backend("vllm", top_p=0.9, seed=7)["extra_body"] == {"top_p": 0.9, "seed": 7}


def test_temperature_is_carried_over() -> None:
    assert _backend("gemini", temperature=0.3)["temperature"] == 0.3


def test_built_in_tools_are_dropped_each_with_a_reason() -> None:
    dropped = _notes(convert_massgen(_load("tools_to_drop.yaml")), NoteKind.DROPPED)

    assert "built-in tools" in dropped["agents[0].backend.enable_web_search"]
    assert "built-in tools" in dropped["agents[2].backend.enable_code_interpreter"]


def test_a_claude_code_agent_is_dropped_whole_and_the_others_are_kept() -> None:
    conversion = convert_massgen(_load("tools_to_drop.yaml"))

    assert [a["id"] for a in conversion.config["agents"]] == ["researcher", "analyst"]
    assert "claude_code" in _notes(conversion, NoteKind.DROPPED)["agents[1]"]


def test_workspace_and_coordination_settings_are_dropped_each_with_a_reason() -> None:
    conversion = convert_massgen(_load("tools_to_drop.yaml"))
    dropped = _notes(conversion, NoteKind.DROPPED)

    for key in (
        "orchestrator.snapshot_storage",
        "orchestrator.agent_temporary_workspace",
        "orchestrator.coordination.enable_planning_mode",
        "orchestrator.coordination.max_orchestration_restarts",
    ):
        assert dropped[key]
    assert set(conversion.config["orchestrator"]) == {"context_paths"}


def test_context_paths_carry_over_with_their_permissions() -> None:
    conversion = convert_massgen(_load("tools_to_drop.yaml"))

    assert conversion.config["orchestrator"]["context_paths"] == [
        {"path": "/Users/me/project/src", "permission": "read"}
    ]


def test_a_context_path_setting_conclave_lacks_is_dropped_with_a_note() -> None:
    entry = {"path": "/src", "permission": "write", "protected_paths": ["a"], "note": "x"}
    data = {"agent": {"id": "a", "backend": {"type": "claude", "model": "m"}}}
    conversion = convert_massgen({**data, "orchestrator": {"context_paths": [entry]}})

    assert conversion.config["orchestrator"]["context_paths"] == [
        {"path": "/src", "permission": "write", "protected_paths": ["a"]}
    ]
    assert "orchestrator.context_paths[0].note" in _notes(conversion, NoteKind.DROPPED)


def test_the_ui_section_is_dropped_with_a_reason() -> None:
    dropped = _notes(convert_massgen(_load("with_ui.yaml")), NoteKind.DROPPED)

    assert "--output-format" in dropped["ui"]


def test_every_dropped_key_has_exactly_one_note() -> None:
    conversion = convert_massgen(_load("tools_to_drop.yaml"))
    paths = [n.path for n in conversion.notes if n.kind is NoteKind.DROPPED]

    assert sorted(paths) == [
        "agents[0].backend.enable_code_execution",
        "agents[0].backend.enable_web_search",
        "agents[1]",
        "agents[2].backend.enable_code_interpreter",
        "orchestrator.agent_temporary_workspace",
        "orchestrator.coordination.enable_planning_mode",
        "orchestrator.coordination.max_orchestration_restarts",
        "orchestrator.snapshot_storage",
    ]


def test_the_orchestrator_timeout_becomes_run_timeout() -> None:
    config = convert_massgen(_load("mixed_panel.yaml")).config

    assert config["orchestrator"]["run_timeout"] == 1800


def test_top_level_timeout_settings_become_orchestrator_keys() -> None:
    config = convert_massgen(_load("with_ui.yaml")).config

    assert config["orchestrator"] == {"run_timeout": 900}


def test_max_new_answers_per_agent_is_carried_over() -> None:
    config = convert_massgen(_load("mixed_panel.yaml")).config

    assert config["orchestrator"]["max_new_answers_per_agent"] == 2


def test_skipping_coordination_rounds_becomes_skip_voting() -> None:
    data = {"agent": {"id": "a", "backend": {"type": "claude", "model": "m"}}}
    config = convert_massgen({**data, "orchestrator": {"skip_coordination_rounds": True}}).config

    assert config["orchestrator"] == {"skip_voting": True}


def test_an_agent_id_conclave_cannot_take_is_rewritten_and_noted() -> None:
    data = {"agents": [{"id": "my agent/1", "backend": {"type": "claude", "model": "m"}}]}
    conversion = convert_massgen(data)

    assert conversion.config["agents"][0]["id"] == "my_agent_1"
    assert "my_agent_1" in _notes(conversion, NoteKind.CHANGED)["agents[0].id"]


def test_an_unknown_backend_type_drops_the_agent_naming_the_types_it_knows() -> None:
    conversion = convert_massgen({"agents": [{"id": "a", "backend": {"type": "gpt5-turbo"}}]})

    assert conversion.config["agents"] == []
    assert "chatcompletion" in _notes(conversion, NoteKind.DROPPED)["agents[0].backend"]


def test_an_unknown_top_level_key_is_dropped_with_a_note() -> None:
    data = {"agent": {"id": "a", "backend": {"type": "claude", "model": "m"}}, "extras": 1}

    assert "extras" in _notes(convert_massgen(data), NoteKind.DROPPED)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([1, 2], "a list"),
        ({"orchestrator": {}}, "neither 'agents' nor 'agent'"),
        ({"agents": "alice"}, "must be a list"),
        ({"agent": {}, "agents": []}, "both"),
    ],
)
def test_input_that_is_not_a_massgen_config_is_refused_saying_why(data: Any, says: str) -> None:
    with pytest.raises(MassGenError, match=says):
        convert_massgen(data)


def test_massgens_cwd_becomes_a_path_relative_to_the_run_directory_with_a_note() -> None:
    data = {
        "agent": {"id": "a", "backend": {"type": "claude", "model": "m"}},
        "orchestrator": {"context_paths": [{"path": "${cwd}/src"}, {"path": "${cwd}"}]},
    }
    conversion = convert_massgen(data)

    assert conversion.config["orchestrator"]["context_paths"] == [{"path": "./src"}, {"path": "."}]
    note = _notes(conversion, NoteKind.CHANGED)["orchestrator.context_paths[0].path"]
    assert "'${cwd}/src' is now './src'" in note


def test_a_protected_path_under_cwd_becomes_relative_to_its_context_path() -> None:
    entry = {"path": "${cwd}/src", "protected_paths": ["${cwd}/src/vendor", "${cwd}/README"]}
    data = {
        "agent": {"id": "a", "backend": {"type": "claude", "model": "m"}},
        "orchestrator": {"context_paths": [entry]},
    }
    conversion = convert_massgen(data)

    (converted,) = conversion.config["orchestrator"]["context_paths"]
    assert converted["protected_paths"] == ["vendor", "../README"]
    assert "orchestrator.context_paths[0].protected_paths[0]" in _notes(
        conversion, NoteKind.CHANGED
    )


def test_cwd_in_an_mcp_servers_arguments_becomes_the_run_directory() -> None:
    server = {"name": "fs", "type": "stdio", "command": "npx", "args": ["serve", "${cwd}/data"]}
    data = {
        "agent": {"id": "a", "backend": {"type": "claude", "model": "m", "mcp_servers": [server]}}
    }

    (converted,) = convert_massgen(data).config["agents"][0]["mcp_servers"]

    assert converted["args"] == ["serve", "./data"]
