"""``orchestrator.sandbox``: local by default; docker with its image and limits."""

from __future__ import annotations

import pytest

from conclave.config.loader import ConfigError, parse_config
from conclave.config.schema import OrchestratorConfig
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind


def test_the_default_sandbox_is_local_with_the_locally_built_image() -> None:
    sandbox = OrchestratorConfig().sandbox
    assert (sandbox.type, sandbox.image) == (SandboxKind.LOCAL, "conclave-sandbox:latest")


def test_a_config_chooses_docker_and_its_limits() -> None:
    config = parse_config(
        {
            "agents": [{"id": "a"}],
            "orchestrator": {"sandbox": {"type": "docker", "memory_mb": 512, "pids": 100}},
        }
    )
    assert config.orchestrator.sandbox == SandboxConfig(
        type=SandboxKind.DOCKER, memory_mb=512, pids=100
    )


def test_an_unknown_sandbox_type_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"sandbox\.type"):
        parse_config({"agents": [{"id": "a"}], "orchestrator": {"sandbox": {"type": "vm"}}})


@pytest.mark.parametrize(
    ("field", "value"), [("memory_mb", 0), ("pids", 1), ("shell_timeout", 0), ("image", " ")]
)
def test_a_limit_out_of_range_is_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxConfig(**{field: value})  # type: ignore[arg-type]
