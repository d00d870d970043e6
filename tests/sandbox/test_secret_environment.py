"""A sandbox's commands never find the run's secrets in their environment, whatever the
variables holding them are called: the local sandbox drops them by name (every
``api_key_env``) and by value; the docker sandbox passes only the variables
``sandbox.env.allow`` names, less those holding a secret."""

from __future__ import annotations

import secrets
from pathlib import Path

import docker
import pytest

from conclave.actors.sandbox import open_sandbox
from conclave.actors.sandbox.environment import without_secrets
from conclave.actors.sandbox.local import LocalSandbox
from conclave.config.run_secrets import RunSecrets
from conclave.config.schema.sandbox import SandboxConfig, SandboxEnv, SandboxKind

KEY = "zq-plain-name-key-0123456789abcdef"
SECRETS = RunSecrets(values=frozenset({KEY}), variables=frozenset({"ZQ_AGENT_CRED"}))


def test_a_variable_api_key_env_names_is_dropped_whatever_its_value() -> None:
    environ = {"ZQ_AGENT_CRED": "short", "PATH": "/bin"}

    assert without_secrets(environ, SECRETS) == {"PATH": "/bin"}


def test_a_variable_holding_a_secret_value_is_dropped_whatever_its_name() -> None:
    environ = {"BUILD_ID": KEY, "OPTS": f"--key={KEY} -v", "PATH": "/bin", "HOME": "/home/me"}

    assert without_secrets(environ, SECRETS) == {"PATH": "/bin", "HOME": "/home/me"}


async def test_a_local_command_sees_neither_the_named_variable_nor_the_value_elsewhere(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZQ_AGENT_CRED", KEY)
    monkeypatch.setenv("ZQ_COPY_OF_IT", KEY)
    monkeypatch.setenv("ZQ_HARMLESS", "kept")
    sandbox = LocalSandbox(
        workspace=workspace, mounts=(), config=SandboxConfig(), use_bubblewrap=False,
        secrets=SECRETS,
    )  # fmt: skip

    outcome = await sandbox.run_shell("env", cwd=workspace, timeout=10)

    assert KEY not in outcome.output
    assert "ZQ_AGENT_CRED" not in outcome.output and "ZQ_COPY_OF_IT" not in outcome.output
    assert "ZQ_HARMLESS=kept" in outcome.output


async def test_open_sandbox_hands_the_secrets_to_a_local_sandbox(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZQ_COPY_OF_IT", KEY)
    config = SandboxConfig(type=SandboxKind.LOCAL)
    async with open_sandbox(
        config, run_id="r", agent="a", workspace=workspace, mounts=(), secrets=SECRETS
    ) as sandbox:
        outcome = await sandbox.run_shell("env", cwd=workspace, timeout=10)

    assert KEY not in outcome.output and "PATH=" in outcome.output


async def test_a_docker_command_sees_no_variable_of_the_users(
    engine: docker.DockerClient, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZQ_AGENT_CRED", KEY)
    config = SandboxConfig(type=SandboxKind.DOCKER, memory_mb=256, pids=64)
    run_id = f"env-{secrets.token_hex(3)}"
    async with open_sandbox(
        config, run_id=run_id, agent="a", workspace=workspace, mounts=(), secrets=SECRETS
    ) as sandbox:
        outcome = await sandbox.run_shell("env", cwd=workspace, timeout=20)

    assert KEY not in outcome.output and "ZQ_AGENT_CRED" not in outcome.output
    assert "HOME=/tmp" in outcome.output


async def test_a_docker_command_sees_an_allowed_variable_but_not_one_holding_a_secret(
    engine: docker.DockerClient, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZQ_COPY_OF_IT", KEY)
    monkeypatch.setenv("ZQ_HARMLESS", "kept")
    config = SandboxConfig(
        type=SandboxKind.DOCKER, memory_mb=256, pids=64, env=SandboxEnv(allow=("ZQ_*",))
    )
    run_id = f"env-{secrets.token_hex(3)}"
    async with open_sandbox(
        config, run_id=run_id, agent="a", workspace=workspace, mounts=(), secrets=SECRETS
    ) as sandbox:
        outcome = await sandbox.run_shell("env", cwd=workspace, timeout=20)

    assert KEY not in outcome.output and "ZQ_COPY_OF_IT" not in outcome.output
    assert "ZQ_HARMLESS=kept" in outcome.output
