"""The ``mcp_servers`` sections: MCP servers whose tools the agents are offered.

At the top level, every agent is offered the server's tools (one server process shared by
the run); under an agent, only that agent is (a process of its own). Two transports, tagged
by ``type``: ``stdio`` (a command Conclave starts, talking over its stdin and stdout) and
``streamable-http`` (a URL).

A server's tools are offered as ``mcp__<name>__<tool>``. ``tools.allow`` (empty: all) and
``tools.deny`` choose among them; ``read_only``, when given, is the full list of the
server's tools that count as read-only (plan mode offers only those), instead of each
tool's own ``readOnlyHint``.

A stdio server's environment is ``PATH`` plus ``env``, nothing else: the user's API keys
reach a server only when ``env`` names them (``FOO: ${FOO}``). It runs confined, as the
agents' shell commands are, unless ``trust: true``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import attrs

from conclave.config.limits import MAX_TIMEOUT_S
from conclave.config.schema.checks import InvalidValue, seconds
from conclave.config.schema.endpoint import non_empty

__all__ = [
    "MCP_SERVER_TYPES",
    "McpServerConfig",
    "McpToolFilter",
    "StdioMcpServer",
    "StreamableHttpMcpServer",
    "check_unique_servers",
]

_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$")
_NAME_RULE = "1-32 letters, digits, '-' or single '_', starting with a letter or digit"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_name(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value) or value.endswith("_"):
        raise InvalidValue(
            f"MCP server name {value!r} must be {_NAME_RULE} (it becomes part of the tool "
            "names mcp__<name>__<tool>)",
            expected=_NAME_RULE,
        )


def _names(*, what: str) -> Any:
    def check(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, str) and v.strip() for v in value):
            raise InvalidValue(
                f"{attr.name!r} must be a list of {what}; got {value!r}",
                expected=f"a list of {what}",
            )

    return check


def _env(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise InvalidValue(
            f"{attr.name!r} must map variable names to strings; got {value!r}",
            expected="a mapping of variable names to strings",
        )
    for name, text in value.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise InvalidValue(
                f"environment variable name {name!r} must be letters, digits and '_', not "
                "starting with a digit",
                expected="a variable name such as GITHUB_TOKEN",
            )
        if not isinstance(text, str) or "\0" in text:
            raise InvalidValue(
                f"environment variable {name!r} must be a string without NUL bytes; quote "
                "numbers and booleans",
                expected="a string",
            )


def _headers(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidValue(
            f"{attr.name!r} must map header names to string values; got {value!r}",
            expected="a mapping of header names to strings",
        )


def _url(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidValue(
            f"{attr.name!r} must be an http:// or https:// URL such as "
            f"http://127.0.0.1:8000/mcp; got {value!r}",
            expected="an http:// or https:// URL",
        )


def _command(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    non_empty()(_inst, attr, value)
    if "=" in value.split("/")[-1] or "\0" in value:
        raise InvalidValue(
            f"{attr.name!r} must be a program (a name on PATH or a path) without '=' or NUL; "
            f"got {value!r}",
            expected="a program such as mcp-server-git or npx",
        )


def _args(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(v, str) and "\0" not in v for v in value):
        raise InvalidValue(
            f"{attr.name!r} must be a list of strings; quote numbers; got {value!r}",
            expected="a list of strings",
        )


@attrs.frozen(kw_only=True)
class McpToolFilter:
    """Which of a server's tools are offered: those in ``allow`` (empty: every one), less
    those in ``deny``. Names are the server's own (``read_file``, not ``mcp__fs__read_file``)."""

    allow: tuple[str, ...] = attrs.field(default=(), validator=_names(what="tool names"))
    deny: tuple[str, ...] = attrs.field(default=(), validator=_names(what="tool names"))

    def offers(self, tool: str) -> bool:
        return (not self.allow or tool in self.allow) and tool not in self.deny


@attrs.frozen(kw_only=True)
class _Common:
    name: str = attrs.field(validator=_check_name)
    """The server's name in tool names (``mcp__<name>__<tool>``) and messages."""
    tools: McpToolFilter = attrs.field(factory=McpToolFilter)
    read_only: tuple[str, ...] | None = attrs.field(
        default=None, validator=attrs.validators.optional(_names(what="tool names"))
    )
    """``null``: each tool's ``readOnlyHint`` says whether it is read-only; a list: exactly
    these of the server's tools are read-only (plan mode offers only them)."""
    call_timeout: float = attrs.field(default=60.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds one tool call may take; then the request is cancelled and the model is told."""
    startup_timeout: float = attrs.field(default=30.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds to start the server and list its tools; past it, its tools are not offered."""

    def is_read_only(self, tool: str, hint: bool | None) -> bool:
        """The config's word if it gives one, else the server's hint (absent: not)."""
        if self.read_only is not None:
            return tool in self.read_only
        return bool(hint)


@attrs.frozen(kw_only=True)
class StdioMcpServer(_Common):
    """A server Conclave runs as a process; it is stopped when the run ends."""

    type: Literal["stdio"] = "stdio"
    command: str = attrs.field(validator=_command)
    """A program on ``PATH`` or a path (``npx``, ``mcp-server-git``, ``./server.py``)."""
    args: tuple[str, ...] = attrs.field(default=(), validator=_args)
    env: dict[str, str] = attrs.field(factory=dict, validator=_env, hash=False)
    """The server's whole environment, with ``PATH`` (the user's unless given here)."""
    cwd: Path | None = None
    """Where the server runs; ``null``: Conclave's current directory."""
    trust: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """``false``: the server runs confined like the agents' shell commands (bubblewrap: the
    system, its own installation and the context paths, no network unless the sandbox has
    it), and is refused where it cannot be; ``true``: it runs as you, unconfined."""


@attrs.frozen(kw_only=True)
class StreamableHttpMcpServer(_Common):
    """A server already running, reached over MCP's streamable HTTP transport."""

    type: Literal["streamable-http"] = "streamable-http"
    url: str = attrs.field(validator=_url)
    headers: dict[str, str] = attrs.field(factory=dict, validator=_headers, hash=False)
    """Sent with every request (an ``Authorization`` header, written ``${TOKEN}``)."""


McpServerConfig = StdioMcpServer | StreamableHttpMcpServer
"""A tagged union on ``type`` (``stdio`` when absent)."""

MCP_SERVER_TYPES: dict[str, type[McpServerConfig]] = {
    "stdio": StdioMcpServer,
    "streamable-http": StreamableHttpMcpServer,
}


def check_unique_servers(
    _inst: object, _attr: attrs.Attribute[Any], value: tuple[McpServerConfig, ...]
) -> None:
    """Two servers of one list with one name would offer the same tool names."""
    seen: set[str] = set()
    for server in value:
        if server.name in seen:
            raise InvalidValue(
                f"MCP server name {server.name!r} appears twice; names must be unique",
                expected="unique server names",
            )
        seen.add(server.name)
