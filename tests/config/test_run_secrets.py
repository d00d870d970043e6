"""Which values of a config are a run's secrets: every ``Secret``, the value of every
``api_key_env`` under any name, and an MCP server's ``env`` and ``headers`` (less the
variables that hold no secret by convention); none shorter than ``MIN_SECRET_LENGTH``."""

from __future__ import annotations

from typing import Any

import pytest

from conclave.config import run_secrets as run_secrets_module
from conclave.config.loader import parse_config
from conclave.config.run_secrets import run_secrets
from conclave.config.schema import ConclaveConfig
from conclave.config.secret import MIN_SECRET_LENGTH

KEY = "gw-0123456789abcdef-inline"


def config(*agents: dict[str, Any], **top: Any) -> Any:
    return parse_config({"agents": list(agents), **top})


def openai(agent_id: str, **backend: Any) -> dict[str, Any]:
    return {"id": agent_id, "backend": {"type": "openai", "model": "m", **backend}}


def test_an_inline_api_key_is_a_secret() -> None:
    secrets = run_secrets(config(openai("a", api_key=KEY)), {})

    assert KEY in secrets.values


def test_the_value_of_the_variable_api_key_env_names_is_a_secret_whatever_its_name() -> None:
    environ = {"ZQ_WHATEVER": "zq-env-key-0123456789", "OTHER": "not-a-secret-at-all"}

    secrets = run_secrets(config(openai("a", api_key_env="ZQ_WHATEVER")), environ)

    assert secrets.values == {"zq-env-key-0123456789"}
    assert secrets.variables == {"ZQ_WHATEVER"}


def test_every_agents_key_counts_each_from_its_own_variable() -> None:
    environ = {"KEY_A": "first-key-0123456789", "KEY_B": "second-key-0123456789"}
    both = config(openai("a", api_key_env="KEY_A"), openai("b", api_key_env="KEY_B"))

    assert run_secrets(both, environ).values == {"first-key-0123456789", "second-key-0123456789"}


def test_an_mcp_servers_env_values_are_secrets_but_not_its_path_or_locale() -> None:
    env = {
        "SERVICE_TOKEN": "tok-0123456789",
        "ENDPOINT": "https://internal.example/v1",
        "PATH": "/usr/local/bin:/usr/bin",
        "LC_ALL": "en_US.UTF-8",
    }
    servers = [{"name": "svc", "command": "svc", "env": env}]

    secrets = run_secrets(config({"id": "a"}, mcp_servers=servers), {})

    assert secrets.values == {"tok-0123456789", "https://internal.example/v1"}


def test_an_agents_own_mcp_server_counts_too() -> None:
    server = {"name": "own", "command": "svc", "env": {"PASS": "own-server-pass-42"}}

    secrets = run_secrets(config({"id": "a", "mcp_servers": [server]}), {})

    assert secrets.values == {"own-server-pass-42"}


def test_a_header_counts_whole_and_its_token_after_the_scheme_alone() -> None:
    headers = {"Authorization": "Bearer hdr-token-0123456789"}
    servers = [
        {"name": "web", "type": "streamable-http", "url": "http://h/mcp", "headers": headers}
    ]

    secrets = run_secrets(config({"id": "a"}, mcp_servers=servers), {})

    assert secrets.values == {"Bearer hdr-token-0123456789", "hdr-token-0123456789"}


def test_values_shorter_than_the_minimum_are_not_secrets_by_value() -> None:
    short = "x" * (MIN_SECRET_LENGTH - 1)
    environ = {"LOCAL_KEY": short}

    secrets = run_secrets(config(openai("a", api_key_env="LOCAL_KEY")), environ)

    assert secrets.values == set()
    assert secrets.variables == {"LOCAL_KEY"}  # dropped from a sandbox by name all the same


def test_a_scripted_panel_has_no_secrets() -> None:
    secrets = run_secrets(config({"id": "a"}, {"id": "b"}), {"OPENAI_API_KEY": "sk-unused-0123"})

    assert secrets.values == set() and secrets.variables == set()


def test_runs_of_one_config_walk_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[ConclaveConfig] = []
    walk = run_secrets_module._secrets_in

    def counting(value: ConclaveConfig) -> Any:
        walked.append(value)
        return walk(value)

    monkeypatch.setattr(run_secrets_module, "_secrets_in", counting)
    shared = config(openai("a", api_key=KEY))

    first, second = run_secrets(shared, {}), run_secrets(shared, {})

    assert first == second and KEY in first.values
    assert walked.count(shared) == 1


def test_an_equal_config_made_anew_is_walked_for_its_own_secrets() -> None:
    other = "gw-fedcba9876543210-inline"
    run_secrets(config(openai("a", api_key=KEY)), {})

    assert run_secrets(config(openai("a", api_key=other)), {}).values == {other}


def test_the_environment_is_read_at_each_run_of_one_config() -> None:
    shared = config(openai("a", api_key_env="ZQ_KEY"))

    before = run_secrets(shared, {"ZQ_KEY": "zq-first-key-0123456789"})
    after = run_secrets(shared, {"ZQ_KEY": "zq-second-key-0123456789"})

    assert before.values == {"zq-first-key-0123456789"}
    assert after.values == {"zq-second-key-0123456789"}
