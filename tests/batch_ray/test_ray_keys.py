"""Ray's security: API keys travel to Ray workers as the names of environment variables,
never as keys; a cluster with token authentication that turns the batch away gets a hint."""

from __future__ import annotations

import pickle
import socket
from pathlib import Path

import pytest
import yaml

from conclave.actors.batch.ray_engine import RayUnavailable, _open_cluster
from conclave.actors.batch.ray_keys import LiteralKey, config_by_key_names, job_by_key_names
from conclave.actors.batch.work import BatchJob, JudgeRequest
from conclave.config.schema import AgentConfig, ConclaveConfig
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from tests.batch.helpers import batch, tasks, write_tasks

KEY = "sk-test-0123456789abcdef"


def _config(key: str | None, env: str = "OPENAI_API_KEY") -> ConclaveConfig:
    secret = None if key is None else Secret(key)
    backend = OpenAIBackendConfig(model="m", api_key=secret, api_key_env=env)
    return ConclaveConfig(agents=(AgentConfig(id="a", backend=backend),))


def _backend(config: ConclaveConfig) -> OpenAIBackendConfig:
    backend = config.agents[0].backend
    assert isinstance(backend, OpenAIBackendConfig)
    return backend


def test_a_key_from_the_backends_variable_travels_as_that_variables_name() -> None:
    sent = config_by_key_names(_config(KEY), {"OPENAI_API_KEY": KEY})

    assert _backend(sent).api_key is None and _backend(sent).api_key_env == "OPENAI_API_KEY"


def test_a_key_from_another_variable_travels_as_that_variables_name() -> None:
    sent = config_by_key_names(_config(KEY), {"OPENAI_API_KEY": "other", "TEAM_KEY": KEY})

    assert _backend(sent).api_key is None and _backend(sent).api_key_env == "TEAM_KEY"


def test_a_key_written_in_the_config_is_refused() -> None:
    with pytest.raises(LiteralKey, match="agent 'a': its api_key is written in the config"):
        config_by_key_names(_config(KEY), {"OPENAI_API_KEY": "other"})


def test_no_key_of_a_job_or_its_judge_is_in_what_is_sent() -> None:
    job = BatchJob(
        key="j",
        task="t",
        config=_config(KEY),
        judge=JudgeRequest(config=_config(KEY, env="JUDGE_KEY"), before="", after=""),
    )

    sent = pickle.dumps(job_by_key_names(job, {"OPENAI_API_KEY": KEY, "JUDGE_KEY": KEY}))

    assert KEY.encode() not in sent
    assert KEY.encode() in pickle.dumps(job)  # what would have travelled


def test_a_ray_batch_with_a_key_in_its_config_is_refused_before_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = {"type": "openai", "model": "m", "api_key": KEY}
    config = tmp_path / "keyed.yaml"
    config.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--dry-run", "--engine", "ray", "--config", config)

    assert ran.code == 2
    assert "--engine ray: agent 'a': its api_key is written in the config" in ran.err


class _RefusingRay:
    """A Ray whose ``init`` is turned away, as a token-authenticated cluster turns away a
    driver without its token."""

    @staticmethod
    def is_initialized() -> bool:
        return False

    @staticmethod
    def init(**_: object) -> None:
        raise ConnectionError("Could not connect to the GCS")


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        (None, "set RAY_AUTH_MODE=token and give the cluster's token"),
        ("token", "RAY_AUTH_MODE=token is set: check that the token is the cluster's"),
    ],
)
def test_a_cluster_that_turns_the_batch_away_gets_a_hint_about_token_authentication(
    monkeypatch: pytest.MonkeyPatch, mode: str | None, says: str
) -> None:
    if mode is None:
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    else:
        monkeypatch.setenv("RAY_AUTH_MODE", mode)
    with socket.create_server(("127.0.0.1", 0)) as listening:  # something answers there
        address = f"127.0.0.1:{listening.getsockname()[1]}"
        with (
            pytest.raises(RayUnavailable) as refused,
            _open_cluster(_RefusingRay, address),  # type: ignore[arg-type]
        ):
            pass

    assert f"--address {address}: Ray could not start (Could not connect to the GCS)" in str(
        refused.value
    )
    assert says in str(refused.value)
