"""``orchestrator.sandbox``: local by default; docker with its image and limits."""

from __future__ import annotations

import pytest

from conclave.config.loader import ConfigError, parse_config
from conclave.config.schema import OrchestratorConfig
from conclave.config.schema.sandbox import SandboxConfig, SandboxEnv, SandboxKind


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


def test_a_config_opts_into_the_network_an_env_policy_and_a_cpu_limit() -> None:
    config = parse_config(
        {
            "agents": [{"id": "a"}],
            "orchestrator": {
                "sandbox": {
                    "network": True,
                    "env": {"allow": ["GITHUB_TOKEN"], "deny": ["AWS_*"]},
                    "cpu_seconds": 30,
                }
            },
        }
    )
    sandbox = config.orchestrator.sandbox
    assert (sandbox.network, sandbox.cpu_seconds) == (True, 30)
    assert sandbox.env == SandboxEnv(allow=("GITHUB_TOKEN",), deny=("AWS_*",))


def test_the_network_is_off_and_no_variable_is_listed_by_default() -> None:
    sandbox = SandboxConfig()
    assert (sandbox.network, sandbox.env, sandbox.cpu_seconds) == (False, SandboxEnv(), 600)


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ({"env": {"allow": ["not a name"]}}, r"sandbox\.env\.allow: 'allow': 'not a name' is not"),
        ({"env": {"deny": "AWS_*"}}, r"sandbox\.env\.deny: expected a list"),
        ({"network": "yes"}, r"sandbox\.network: expected true or false"),
        ({"cpu_seconds": 0}, r"sandbox\.cpu_seconds: 'cpu_seconds' must be a whole number"),
    ],
)
def test_a_bad_sandbox_field_is_refused_naming_where_and_what(
    section: dict[str, object], where: str
) -> None:
    with pytest.raises(ConfigError, match=where):
        parse_config({"agents": [{"id": "a"}], "orchestrator": {"sandbox": section}})
