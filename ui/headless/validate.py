"""``conclave validate CONFIG [--json] [--check-endpoints]``: check a config file the way
``conclave run`` would, and say everything that is wrong with it at once.

The same loader and the same whole-config checks (:func:`config.validation.check_runnable`)
as a run, so a config that validates does not then fail as a run, and the other way round.
Valid: exit 0 and one line (agents, backends, endpoints). Not valid: exit 2 and every
problem, one per line (``file:line:column: path: message``), or with ``--json`` one object
``{valid, errors, warnings}`` whose problems are ``{file, line, column, path, message,
expected, got, suggestion}``.

Warnings do not fail validation: an old key name, and an agent whose key is not set
(neither ``api_key`` nor its environment variable) for a server that is not on this machine:
the run would exclude that agent, but CI can validate the examples without any key.

``--check-endpoints`` sends one tiny request (a one-token completion) per endpoint and model,
through the real backend code, to catch a wrong URL, key or model before a long run; each
endpoint's outcome is one line. A refusal that the config causes (a key, a model, a URL:
the backends' fatal errors) exits 2; an endpoint that failed otherwise (overloaded, too
slow) exits 1.

A stdout that cannot take the result (closed before the command started, or full) is said
on stderr with the verdict, and exits 1 (:mod:`ui.streams`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Hashable, Sequence

import attrs
import trio

from conclave.actors.llm.errors import LLMError
from conclave.actors.llm.pool import BackendPool, open_backends
from conclave.actors.llm.protocol import ChatMessage, CompletionRequest
from conclave.config.keys import missing_keys
from conclave.config.loader import ConfigError, LoadedConfig, read_config
from conclave.config.problems import Problem
from conclave.config.schema import AgentConfig, ConclaveConfig
from conclave.config.schema.endpoint import HttpBackendConfig, endpoint_host
from conclave.config.validation import problems
from conclave.config.wording import listed, plural
from conclave.ui.exit_codes import ExitCode
from conclave.ui.streams import cannot_write, write_stdout
from conclave.ui.text import display_path

__all__ = ["CHECK_TIMEOUT_S", "EndpointCheck", "check_endpoints", "validate_command"]

CHECK_TIMEOUT_S = 60.0
"""Seconds an endpoint check may take, retries included: a server that cannot answer one
token in a minute is not ready for a run."""


@attrs.frozen(kw_only=True)
class EndpointCheck:
    """The outcome of one probe: one endpoint and model, for the agents that use them."""

    type: str
    host: str
    model: str
    agents: tuple[int, ...]
    """Indexes into the config's agents."""
    error_class: str | None = None
    """``None``: the endpoint answered; else the backend's error class (``fatal``, ...)."""
    message: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error_class is None


def validate_command(path: str, *, as_json: bool = False, check: bool = False) -> int:
    source = display_path(path)
    try:
        loaded = read_config(path)
    except ConfigError as exc:
        return _report(source, list(exc.problems), list(exc.warnings), None, None, as_json)
    errors = problems(loaded.config, source=source, locations=loaded.locations)
    keys = missing_keys(
        loaded.config, source=source, environ=os.environ, locations=loaded.locations
    )
    warnings = [*loaded.warnings, *keys]
    checks = trio.run(check_endpoints, loaded.config) if check and not errors else None
    if checks is not None:
        errors += [_endpoint_problem(c, loaded, source) for c in checks if not c.ok]
    return _report(source, errors, warnings, loaded, checks, as_json)


def _report(
    source: str,
    errors: Sequence[Problem],
    warnings: Sequence[Problem],
    loaded: LoadedConfig | None,
    checks: Sequence[EndpointCheck] | None,
    as_json: bool,
) -> int:
    code = _exit_code(errors, checks)
    ordered_errors = sorted(errors, key=Problem.sort_key)
    ordered_warnings = sorted(warnings, key=Problem.sort_key)
    verdict = (
        f"{source} is valid" if not errors else f"{source} has {plural(len(errors), 'problem')}"
    )
    if as_json:
        report: dict[str, object] = {
            "valid": not errors,
            "errors": [p.to_json() for p in ordered_errors],
            "warnings": [p.to_json() for p in ordered_warnings],
        }
        if checks is not None and loaded is not None:
            report["endpoints"] = [_check_json(c, loaded.config) for c in checks]
        why = write_stdout(json.dumps(report, indent=2))
        return code if why is None else _unwritten(why, verdict)
    for warning in ordered_warnings:
        print(f"conclave: warning: {warning.render()}", file=sys.stderr)
    if checks and loaded is not None:
        why = write_stdout("\n".join(f"{source}: {_check_line(c, loaded.config)}" for c in checks))
        if why is not None:
            return _unwritten(why, verdict)
    if errors:
        for problem in ordered_errors:
            print(problem.render(), file=sys.stderr)
        print(
            f"conclave: {source}: {plural(len(errors), 'problem')}; fix "
            f"{'it' if len(errors) == 1 else 'them'} and validate again",
            file=sys.stderr,
        )
        return code
    assert loaded is not None
    why = write_stdout(f"{source}: ok ({_summary(loaded.config)})")
    return code if why is None else _unwritten(why, verdict)


def _unwritten(why: str, verdict: str) -> int:
    """Stdout could not take the result: said on stderr with the verdict; exit code 1."""
    return cannot_write("conclave validate", "the result", why, then=verdict)


def _exit_code(errors: Sequence[Problem], checks: Sequence[EndpointCheck] | None) -> int:
    if not errors:
        return ExitCode.OK
    failed = [c for c in checks or () if not c.ok]
    if failed and len(failed) == len(errors) and all(c.error_class != "fatal" for c in failed):
        return ExitCode.FAILED  # only endpoints failing for a reason outside the config
    return ExitCode.USAGE


def _summary(config: ConclaveConfig) -> str:
    """``3 agents: a, b, c; backends: 2 openai, 1 scripted; endpoints: api.openai.com``."""
    ids = [a.id for a in config.agents]
    kinds: dict[str, int] = {}
    for agent in config.agents:
        kinds[agent.backend.type] = kinds.get(agent.backend.type, 0) + 1
    backends = ", ".join(f"{n:,} {kind}" for kind, n in kinds.items())
    hosts = list(
        dict.fromkeys(
            endpoint_host(a.backend.endpoint_url())
            for a in config.agents
            if isinstance(a.backend, HttpBackendConfig)
        )
    )
    endpoints = listed(hosts) if hosts else "none (offline)"
    return (
        f"{plural(len(ids), 'agent')}: {listed(ids)}; backends: {backends}; endpoints: {endpoints}"
    )


# -- endpoint checks ------------------------------------------------------------------------


def _endpoint_of(agent: AgentConfig) -> Hashable:
    """Agents whose probes would be the same request to the same server with the same key."""
    backend = agent.backend
    assert isinstance(backend, HttpBackendConfig)
    key = backend.api_key if backend.api_key is not None else backend.api_key_env
    return (backend.type, backend.endpoint_url(), key, backend.model)


async def check_endpoints(
    config: ConclaveConfig, *, limit: float = CHECK_TIMEOUT_S
) -> list[EndpointCheck]:
    """Probe each endpoint and model the config's agents use, at once, through a backend
    pool as a run opens it; the checks come back in config order. Cancelling cancels every
    probe (each closes its stream)."""
    groups: dict[Hashable, list[int]] = {}
    for index, agent in enumerate(config.agents):
        if isinstance(agent.backend, HttpBackendConfig):
            groups.setdefault(_endpoint_of(agent), []).append(index)
    results: dict[int, EndpointCheck] = {}
    async with open_backends() as pool, trio.open_nursery() as nursery:
        for number, indexes in enumerate(groups.values()):
            nursery.start_soon(_probe, pool, config, tuple(indexes), limit, results, number)
    return [results[n] for n in range(len(groups))]


async def _probe(
    pool: BackendPool,
    config: ConclaveConfig,
    indexes: tuple[int, ...],
    limit: float,
    results: dict[int, EndpointCheck],
    number: int,
) -> None:
    agent = config.agents[indexes[0]]
    backend = agent.backend
    assert isinstance(backend, HttpBackendConfig)
    check = EndpointCheck(
        type=backend.type,
        host=endpoint_host(backend.endpoint_url()),
        model=backend.model,
        agents=indexes,
    )
    request = CompletionRequest(
        messages=(ChatMessage(role="user", content="Reply with the word OK."),),
        max_output_tokens=1,
    )
    started = trio.current_time()
    with trio.move_on_after(limit) as timer:
        try:
            llm = await pool.backend(agent)
            await llm.complete(request)
        except LLMError as exc:
            check = attrs.evolve(check, error_class=exc.error_class.value, message=str(exc))
    if timer.cancelled_caught:
        check = attrs.evolve(check, error_class="transient", message=f"no reply within {limit:g} s")
    results[number] = attrs.evolve(check, seconds=round(trio.current_time() - started, 3))


def _agent_ids(check: EndpointCheck, config: ConclaveConfig) -> list[str]:
    return [config.agents[i].id for i in check.agents]


def _check_line(check: EndpointCheck, config: ConclaveConfig) -> str:
    ids = _agent_ids(check, config)
    who = f"{'agent' if len(ids) == 1 else 'agents'} {listed(ids)}"
    head = f"endpoint {check.host} ({check.type}, model {check.model}; {who})"
    if check.ok:
        return f"{head}: ok in {check.seconds:.2f} s"
    return f"{head}: failed ({check.error_class}): {check.message}"


def _check_json(check: EndpointCheck, config: ConclaveConfig) -> dict[str, object]:
    return {
        "type": check.type,
        "endpoint": check.host,
        "model": check.model,
        "agents": _agent_ids(check, config),
        "ok": check.ok,
        "error_class": check.error_class,
        "message": check.message,
        "seconds": check.seconds,
    }


def _endpoint_problem(check: EndpointCheck, loaded: LoadedConfig, source: str) -> Problem:
    path = f"agents[{check.agents[0]}].backend"
    line, column = loaded.locations.get(path, (None, None))
    advice = (
        "check base_url, the key and the model"
        if check.error_class == "fatal"
        else "the endpoint may be overloaded or slow; try again"
    )
    return Problem(
        message=f"the endpoint check of {check.host} (model {check.model}) failed: "
        f"{check.message}; {advice}",
        path=path,
        file=source,
        line=line,
        column=column,
        expected="a reply to a one-token request",
        got=f"{check.error_class} error",
    )
