"""``orchestrator.interactive_mode``: its defaults, and problems reported like every other
section's (file, line, column, what was expected, the closest valid key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.config.keys import check_interactive_key
from conclave.config.loader import load_config
from conclave.config.problems import ConfigError
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.backends import OpenAIBackendConfig
from conclave.config.schema.interactive import InteractiveModeConfig


def _load(tmp_path: Path, section: str) -> OrchestratorConfig:
    path = tmp_path / "c.yaml"
    path.write_text(f"agents: [{{id: a}}]\norchestrator:\n  interactive_mode:{section}\n")
    return load_config(path).orchestrator


def test_the_interactive_mode_is_off_without_the_section() -> None:
    assert OrchestratorConfig().interactive is None


def test_an_empty_section_turns_the_interactive_mode_on_with_approval(tmp_path: Path) -> None:
    mode = _load(tmp_path, " {}").interactive
    assert mode is not None
    assert mode.require_approval is True
    assert mode.backend is None
    assert mode.context_compaction.enabled is True


def test_enabled_false_keeps_the_section_but_turns_the_mode_off(tmp_path: Path) -> None:
    orchestrator = _load(tmp_path, " {enabled: false}")
    assert orchestrator.interactive_mode is not None
    assert orchestrator.interactive is None


def test_the_section_takes_its_own_backend(tmp_path: Path) -> None:
    mode = _load(tmp_path, " {backend: {type: scripted, seed: 7}}").interactive
    assert mode is not None and mode.backend == ScriptedBackendConfig(seed=7)


def test_a_misspelt_key_is_reported_at_its_line_with_the_closest_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, "\n    requre_approval: false")
    [problem] = caught.value.problems
    assert problem.path == "orchestrator.interactive_mode.requre_approval"
    assert (problem.line, problem.column) == (4, 5)
    assert problem.suggestion == "require_approval"


def test_a_compaction_threshold_out_of_range_names_the_range(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, "\n    context_compaction: {threshold_tokens: 10}")
    [problem] = caught.value.problems
    assert problem.path == "orchestrator.interactive_mode.context_compaction.threshold_tokens"
    assert problem.expected == "a whole number from 1000 to 10000000"


def test_the_defaults_are_pinned() -> None:
    mode = InteractiveModeConfig()
    assert (mode.enabled, mode.require_approval, mode.append_system_prompt) == (True, True, "")
    assert (mode.context_compaction.threshold_tokens, mode.context_compaction.preserve_recent) == (
        100_000,
        4,
    )


def _with_backend(backend: OpenAIBackendConfig) -> ConclaveConfig:
    return ConclaveConfig(
        agents=(AgentConfig(id="a"),),
        orchestrator=OrchestratorConfig(interactive_mode=InteractiveModeConfig(backend=backend)),
    )


def test_an_interactive_backend_without_its_key_is_refused_naming_the_variable() -> None:
    config = _with_backend(OpenAIBackendConfig(model="m"))
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY") as caught:
        check_interactive_key(config, source="c.yaml", environ={})
    assert caught.value.problems[0].path == "orchestrator.interactive_mode.backend"


def test_an_interactive_backend_with_its_key_or_on_this_machine_passes() -> None:
    check_interactive_key(
        _with_backend(OpenAIBackendConfig(model="m")),
        source=None,
        environ={"OPENAI_API_KEY": "sk-test"},
    )
    local = OpenAIBackendConfig(model="m", base_url="http://127.0.0.1:11434/v1")
    check_interactive_key(_with_backend(local), source=None, environ={})
