"""API keys never travel over Ray's RPC: a job sent to a Ray worker names each key's
environment variable, and the worker reads the key from its own environment when the run
starts (as every run does for an agent without ``api_key``: :func:`config.keys.resolve_key`).

A config's explicit ``api_key`` (``api_key: ${MY_KEY}``, interpolated when the config was
loaded) is replaced by the name of the variable of the batch's environment that holds it:
the backend's ``api_key_env`` when that is the one, else the first other variable (by
name) holding the same key. A key that no variable holds (written into the config itself)
cannot be sent by name, and the batch refuses to run on Ray (:class:`LiteralKey`).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from conclave.actors.batch.work import BatchJob
from conclave.config.schema import AgentConfig, ConclaveConfig
from conclave.config.schema.endpoint import HttpBackendConfig

__all__ = ["LiteralKey", "config_by_key_names", "job_by_key_names"]


class LiteralKey(ValueError):
    """An agent's key is written in its config, not held by an environment variable."""

    def __init__(self, agent: str) -> None:
        super().__init__(
            f"agent {agent!r}: its api_key is written in the config, and on Ray it would "
            "travel in every task; put it in an environment variable set on every node, and "
            "name it with api_key_env (or api_key: ${VAR})"
        )
        self.agent = agent


def _by_name(agent: AgentConfig, environ: Mapping[str, str]) -> AgentConfig:
    backend = agent.backend
    if not isinstance(backend, HttpBackendConfig) or backend.api_key is None:
        return agent
    key = backend.api_key.reveal()
    names = [backend.api_key_env, *sorted(n for n in environ if n != backend.api_key_env)]
    for name in names:
        if environ.get(name) == key:
            return attrs.evolve(
                agent, backend=attrs.evolve(backend, api_key=None, api_key_env=name)
            )
    raise LiteralKey(agent.id)


def config_by_key_names(config: ConclaveConfig, environ: Mapping[str, str]) -> ConclaveConfig:
    """``config`` with every explicit key replaced by its variable's name; raises
    :class:`LiteralKey`."""
    return attrs.evolve(config, agents=tuple(_by_name(a, environ) for a in config.agents))


def job_by_key_names(job: BatchJob, environ: Mapping[str, str]) -> BatchJob:
    """``job`` (and its judge) as it may be sent to a Ray worker."""
    judge = job.judge
    if judge is not None:
        judge = attrs.evolve(judge, config=config_by_key_names(judge.config, environ))
    return attrs.evolve(job, config=config_by_key_names(job.config, environ), judge=judge)
