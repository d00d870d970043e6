"""Whether the agents have their API keys: a config check, made before any run starts.

An agent on a network backend needs a key: its ``api_key``, else the environment variable
``api_key_env``. A server on this machine (Ollama, vLLM, LM Studio) usually wants none, so
no key for a local URL is not missing. The backends (:mod:`actors.llm.sdk_endpoint`) send
what :func:`resolve_key` finds and fail each call whose key :func:`key_status` calls missing;
the checks here say so before a run, from the same two functions.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from conclave.config.problems import ConfigError, Problem
from conclave.config.schema import ConclaveConfig
from conclave.config.schema.endpoint import HttpBackendConfig
from conclave.config.secret import Secret
from conclave.config.wording import listed, plural

__all__ = [
    "KeyStatus",
    "check_interactive_key",
    "check_some_agent_has_a_key",
    "is_local",
    "key_status",
    "missing_keys",
    "resolve_key",
]


class KeyStatus(enum.Enum):
    GIVEN = "given"
    NOT_NEEDED = "not_needed"
    """No key, for a server on this machine: sent without one."""
    MISSING = "missing"
    """No key, for a remote server: every call fails, naming the variable to set."""


def resolve_key(config: HttpBackendConfig, environ: Mapping[str, str]) -> Secret | None:
    """The configured key, else the value of ``api_key_env``; ``None`` when neither is set."""
    if config.api_key is not None:
        return config.api_key
    value = environ.get(config.api_key_env)
    return Secret(value) if value else None


def is_local(base_url: str) -> bool:
    """Whether ``base_url`` is this machine, where a server (Ollama, vLLM, LM Studio)
    usually wants no key."""
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.")


def key_status(key: Secret | None, base_url: str) -> KeyStatus:
    if key is not None:
        return KeyStatus.GIVEN
    return KeyStatus.NOT_NEEDED if is_local(base_url) else KeyStatus.MISSING


def _needing_keys(config: ConclaveConfig, environ: Mapping[str, str]) -> dict[str, list[int]]:
    """Environment variable → the indexes of the agents that need it and have no key."""
    needing: dict[str, list[int]] = {}
    for index, agent in enumerate(config.agents):
        backend = agent.backend
        if not isinstance(backend, HttpBackendConfig):
            continue
        key = resolve_key(backend, environ)
        if key_status(key, backend.endpoint_url()) is KeyStatus.MISSING:
            needing.setdefault(backend.api_key_env, []).append(index)
    return needing


def missing_keys(
    config: ConclaveConfig,
    *,
    source: str,
    environ: Mapping[str, str],
    locations: Mapping[str, tuple[int, int]] | None = None,
) -> list[Problem]:
    """One problem per environment variable that agents need and nobody set (``conclave
    validate`` shows them as warnings: CI validates configs without keys)."""
    where = locations or {}
    found = []
    for variable, indexes in _needing_keys(config, environ).items():
        ids = [config.agents[i].id for i in indexes]
        path = f"agents[{indexes[0]}].backend"
        line, column = where.get(path, (None, None))
        found.append(
            Problem(
                message=f"no API key for {plural(len(ids), 'agent')} ({listed(ids)}): "
                f"api_key is not set and neither is the environment variable {variable}; "
                f"a run would exclude {'it' if len(ids) == 1 else 'them'}: set {variable} "
                "before running",
                path=path,
                file=source,
                line=line,
                column=column,
                expected=f"api_key, or {variable} set in the environment",
                got="neither",
            )
        )
    return found


def check_some_agent_has_a_key(
    config: ConclaveConfig, *, source: str | None, environ: Mapping[str, str] | None = None
) -> None:
    """Before a run: raise :class:`ConfigError` when no agent could make a single call for
    want of a key (every agent on a network backend, none with a key), so a run that cannot
    work does not start; when only some lack one, the run excludes those, saying why, and
    goes on with the others (a mixed panel keeps its working half)."""
    if not config.agents or not all(
        isinstance(a.backend, HttpBackendConfig) for a in config.agents
    ):
        return
    env = os.environ if environ is None else environ
    if sum(map(len, _needing_keys(config, env).values())) == len(config.agents):
        raise ConfigError(problems=missing_keys(config, source=source or "config", environ=env))


def check_interactive_key(
    config: ConclaveConfig, *, source: str | None, environ: Mapping[str, str] | None = None
) -> None:
    """Before the interactive agent starts: raise :class:`~config.problems.ConfigError` when
    its own backend (``interactive_mode.backend``; the first agent's is checked with the
    agents) talks to a remote server and has no key, so its first call cannot fail for that."""
    mode = config.orchestrator.interactive
    backend = mode.backend if mode is not None else None
    if not isinstance(backend, HttpBackendConfig):
        return
    env = os.environ if environ is None else environ
    if key_status(resolve_key(backend, env), backend.endpoint_url()) is not KeyStatus.MISSING:
        return
    variable = backend.api_key_env
    raise ConfigError(
        problems=[
            Problem(
                message=f"no API key for the interactive agent: api_key is not set and neither "
                f"is the environment variable {variable}; set {variable}, or remove "
                "interactive_mode.backend to use the first agent's",
                path="orchestrator.interactive_mode.backend",
                file=source or "config",
                expected=f"api_key, or {variable} set in the environment",
                got="neither",
            )
        ]
    )
