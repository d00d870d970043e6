"""Which values a run's config makes secret, so the run can keep them out of everything it
shows: its sandboxes' environment, and every line it writes (docs/security.md).

A run's secrets are, by value:

- every :class:`~config.secret.Secret` anywhere in the config (each backend's ``api_key``,
  and whatever else the schema types as a ``Secret``);
- the value of the environment variable each network backend reads its key from
  (``api_key_env``), whatever the variable's name;
- every value of an MCP server's ``env`` and ``headers`` (a header's token after its scheme,
  ``Bearer abc``, counts alone too), except the variables in :data:`PLAIN_VARIABLES`, which
  hold no secret by convention (``PATH``, ``HOME``...);

each only when it has at least :data:`~config.secret.MIN_SECRET_LENGTH` characters: a shorter
value is no key any provider issues, and removing every occurrence of it would eat ordinary
text. The variables ``api_key_env`` names are secret by name too, whatever their value's
length: a sandbox's environment loses them outright.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from conclave.config.keys import resolve_key
from conclave.config.schema import ConclaveConfig
from conclave.config.schema.endpoint import HttpBackendConfig
from conclave.config.schema.mcp import McpServerConfig, StdioMcpServer
from conclave.config.secret import MIN_SECRET_LENGTH, Secret

__all__ = ["NO_SECRETS", "PLAIN_VARIABLES", "RunSecrets", "run_secrets"]

PLAIN_VARIABLES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR"}
)
"""Variables of an MCP server's ``env`` whose values are not secrets (and would be common
text, such as a ``PATH``); ``LC_*`` too."""

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9-]*\s+(\S+)$")
"""A header value ``<scheme> <token>`` (``Bearer abc``, ``Token abc``): its token."""


@attrs.frozen(kw_only=True)
class RunSecrets:
    """A run's secrets: see the module docstring."""

    values: frozenset[str] = frozenset()
    """Every secret value, each at least ``MIN_SECRET_LENGTH`` characters long."""
    variables: frozenset[str] = frozenset()
    """Environment variables that hold a key by the config's word (``api_key_env``)."""


NO_SECRETS = RunSecrets()


def run_secrets(config: ConclaveConfig, environ: Mapping[str, str]) -> RunSecrets:
    """The secrets of a run of ``config`` with the environment ``environ``."""
    found = list(_config_secrets(config))
    variables = set()
    for agent in config.agents:
        backend = agent.backend
        if isinstance(backend, HttpBackendConfig):
            variables.add(backend.api_key_env)
            key = resolve_key(backend, environ)
            if key is not None:
                found.append(key.reveal())
    servers = [*config.mcp_servers, *(s for a in config.agents for s in a.mcp_servers)]
    for server in servers:
        found += _server_secrets(server)
    values = frozenset(v for v in found if len(v) >= MIN_SECRET_LENGTH)
    return RunSecrets(values=values, variables=frozenset(variables))


_WALKED: OrderedDict[int, tuple[ConclaveConfig, tuple[str, ...]]] = OrderedDict()
"""The :class:`Secret` values of the configs walked last, by identity (each entry holds its
config, so the id stays its own)."""
_WALKED_KEPT = 16


def _config_secrets(config: ConclaveConfig) -> tuple[str, ...]:
    """The value of every :class:`Secret` in ``config``, walked once per config object: a
    batch's runs share their (frozen) config, and the walk was a quarter of a millisecond of
    each 3-agent run's start (issue 24)."""
    kept = _WALKED.get(id(config))
    if kept is not None and kept[0] is config:
        _WALKED.move_to_end(id(config))
        return kept[1]
    found = tuple(_secrets_in(config))
    _WALKED[id(config)] = (config, found)
    if len(_WALKED) > _WALKED_KEPT:
        _WALKED.popitem(last=False)
    return found


def _server_secrets(server: McpServerConfig) -> Iterator[str]:
    if isinstance(server, StdioMcpServer):
        for name, value in server.env.items():
            if name not in PLAIN_VARIABLES and not name.startswith("LC_"):
                yield value
        return
    for value in server.headers.values():
        yield value
        token = _SCHEME.match(value)
        if token is not None:
            yield token.group(1)


def _secrets_in(config: ConclaveConfig) -> Iterator[str]:
    """The value of every :class:`Secret` in ``config``, an attrs tree, walked with a stack
    rather than a generator per value, each type's way in looked up once: a generator per
    value made a 1,000-agent config 33,000 calls and 36-42 ms at the start of every run,
    6-10 ms now (issue 24)."""
    stack: list[Any] = [config]
    while stack:
        value = stack.pop()
        kind = type(value)
        inside = _INSIDE.get(kind)
        if inside is None:
            inside = _INSIDE[kind] = _inside(kind)
        if inside is _NOTHING:
            continue
        if inside is _SECRET:
            yield value.reveal()
        elif inside is _ITEMS:
            stack += value
        elif inside is _VALUES:
            stack += value.values()
        else:
            stack += [getattr(value, name) for name in inside]


_NOTHING: tuple[str, ...] = ()
_SECRET, _ITEMS, _VALUES = ("<secret>",), ("<items>",), ("<values>",)
_INSIDE: dict[type, tuple[str, ...]] = {}
"""How to look inside a value of each type met: its fields' names (an attrs class), or one
of the markers above; a config's types are few."""


def _inside(kind: type) -> tuple[str, ...]:
    if issubclass(kind, Secret):
        return _SECRET
    if attrs.has(kind):
        return tuple(field.name for field in attrs.fields(kind)) or _NOTHING
    if issubclass(kind, str | bytes):
        return _NOTHING
    if issubclass(kind, tuple | list):
        return _ITEMS
    if issubclass(kind, dict):
        return _VALUES
    return _NOTHING
