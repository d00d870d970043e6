"""MassGen's MCP servers, converted to Conclave's: the ``mcp_servers`` half of
:mod:`config.massgen`.

MassGen configures MCP servers per backend (``agents[i].backend.mcp_servers``, a list of
servers or a mapping of name to server; ``massgen/mcp_tools/security.py`` checks the fields):
``name``, ``type`` (``stdio``, the default, or ``streamable-http``), ``command`` (a string
split like a shell's, or a list) and ``args``, ``env``, ``cwd``, ``url``, ``headers``,
``timeout``, ``security``, and the per-server tool filters ``allowed_tools`` /
``exclude_tools``; the backend's own ``exclude_tools`` names tools of any of its servers
(``mcp__<server>__<tool>``). Conclave configures them per agent (``agents[i].mcp_servers``),
one process each, as MassGen runs them.

What changes on the way, each with a note: the command string is split into ``command`` and
``args``; ``timeout`` is ``call_timeout``; the tool filters are ``tools.allow`` /
``tools.deny`` with the servers' own tool names; a name Conclave cannot use in tool names is
fixed. ``security`` is dropped (Conclave runs the command given, its environment exactly
``PATH`` and ``env``), and so is a server of another transport. ``${VAR}`` in ``env`` and
``headers`` is carried as written: Conclave reads the variable when a run starts.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Protocol

__all__ = ["STDIO_ENVIRONMENT", "Notes", "convert_servers", "server_name"]


class Notes(Protocol):
    """Where the conversion says what changed and what was dropped."""

    def changed(self, path: str, message: str) -> None: ...

    def dropped(self, path: str, message: str) -> None: ...


_TRANSPORTS = ("stdio", "streamable-http")
_CARRIED = {"stdio": ("env", "cwd"), "streamable-http": ("url", "headers")}
_SECURITY = (
    "Conclave has no MCP security levels: it runs the command given, with exactly PATH and "
    "the server's env in its environment, and reaches the URL given"
)
STDIO_ENVIRONMENT = (
    "a stdio server's environment is exactly PATH and its 'env' (no HOME, no API keys): "
    "name in 'env' any variable it needs, as 'NAME: ${NAME}'"
)
"""Said once per agent with stdio servers: what MassGen's servers found in their
environment, Conclave's find only if ``env`` names it."""
_FIELD_ORDER = {
    k: i
    for i, k in enumerate(
        ("name", "type", "command", "args", "cwd", "env", "url", "headers", "tools",
         "call_timeout")
    )
}  # fmt: skip
_NAME_LIMIT = 32


def server_name(name: str) -> str:
    """``name`` as Conclave takes a server's name: letters, digits, ``-`` and single ``_``,
    starting with a letter or digit, at most 32 (it becomes part of ``mcp__<name>__<tool>``).
    Empty if nothing is left."""
    fixed = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    fixed = re.sub(r"_{2,}", "_", fixed).lstrip("_-")
    return fixed[:_NAME_LIMIT].rstrip("_")


def _tool(name: Any) -> Any:
    """A tool as the server names it: MassGen's filters take ``mcp__<server>__<tool>`` or the
    bare name."""
    if isinstance(name, str) and name.startswith("mcp__") and "__" in name[5:]:
        return name[5:].split("__", 1)[1]
    return name


def _entries(path: str, data: Any, notes: Notes) -> list[tuple[str, dict[str, Any]]]:
    """The servers of a list or of a mapping of name to server, each with its path."""
    if isinstance(data, dict):
        out = []
        for name, server in data.items():
            where = f"{path}.{name}"
            if not isinstance(server, dict):
                notes.dropped(where, f"expected an MCP server (a mapping), got {_kind(server)}")
                continue
            out.append((where, {**server, "name": name}))  # the key names it, as in MassGen
        return out
    if isinstance(data, list):
        out = []
        for i, server in enumerate(data):
            where = f"{path}[{i}]"
            if not isinstance(server, dict):
                notes.dropped(where, f"expected an MCP server (a mapping), got {_kind(server)}")
                continue
            out.append((where, server))
        return out
    notes.dropped(path, f"expected a list of MCP servers or a mapping of them, got {_kind(data)}")
    return []


def convert_servers(
    path: str, data: Any, notes: Notes, *, exclude: Any = None, exclude_path: str = ""
) -> list[dict[str, Any]]:
    """Conclave's ``mcp_servers`` for MassGen's ``mcp_servers`` ``data`` found at ``path``;
    ``exclude`` is the backend's ``exclude_tools`` (at ``exclude_path``), whose entries naming
    a converted server's tools become that server's ``tools.deny``."""
    servers: list[dict[str, Any]] = []
    renamed: dict[str, dict[str, Any]] = {}
    for where, entry in _entries(path, data, notes):
        converted = _server(where, entry, notes)
        if converted is not None:
            servers.append(converted)
            renamed[str(entry.get("name"))] = converted
            renamed[str(converted.get("name"))] = converted
    if exclude is not None:
        _exclude(exclude_path, exclude, renamed, notes)
    return [
        {k: s[k] for k in sorted(s, key=lambda k: _FIELD_ORDER.get(k, len(_FIELD_ORDER)))}
        for s in servers
    ]


def _server(path: str, data: dict[str, Any], notes: Notes) -> dict[str, Any] | None:
    kind = data.get("type", "stdio")
    if kind not in _TRANSPORTS:
        notes.dropped(
            path,
            f"transport {kind!r}: Conclave reaches MCP servers over stdio or streamable-http "
            "('sse' is deprecated in MCP; most servers speak streamable-http too)",
        )
        return None
    out: dict[str, Any] = {}
    if kind != "stdio":
        out["type"] = kind
    tools: dict[str, list[Any]] = {}
    for key, value in data.items():
        where = f"{path}.{key}"
        if key == "type":
            continue
        if key == "name":
            out["name"] = _name(where, value, notes)
        elif key == "command" and kind == "stdio":
            _command(where, value, out, notes)
        elif key == "args" and kind == "stdio":
            out["args"] = [*out.get("args", []), *value] if isinstance(value, list) else value
        elif key in _CARRIED[kind]:
            out[key] = value
        elif key == "timeout":
            out["call_timeout"] = value
            notes.changed(where, "now 'call_timeout' (seconds one tool call may take)")
        elif key in ("allowed_tools", "exclude_tools"):
            field = "allow" if key == "allowed_tools" else "deny"
            if isinstance(value, list):
                tools[field] = [_tool(v) for v in value]
                notes.changed(where, f"now 'tools.{field}', with the server's own tool names")
            else:
                tools[field] = value  # the loader names what it expected
        elif key == "security":
            notes.dropped(where, _SECURITY)
        else:
            notes.dropped(where, f"not a setting of a {kind} MCP server in Conclave")
    if tools:
        out["tools"] = tools
    return out


def _name(path: str, value: Any, notes: Notes) -> Any:
    if not isinstance(value, str):
        return value  # the loader names what a name must be
    fixed = server_name(value)
    if fixed != value and fixed:
        notes.changed(
            path,
            f"{value!r} is now {fixed!r} (at most {_NAME_LIMIT} letters, digits, '-' or single "
            "'_': it becomes part of the tool names mcp__<name>__<tool>)",
        )
        return fixed
    return value


def _command(path: str, value: Any, out: dict[str, Any], notes: Notes) -> None:
    """MassGen splits a command string like a shell (``npx -y pkg``); a list is the words."""
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value]
    elif isinstance(value, list) and value:
        words = value
    else:
        out["command"] = value  # the loader names what a command must be
        return
    out["command"] = words[0]
    if len(words) > 1:
        out["args"] = [*words[1:], *out.get("args", [])]
        notes.changed(path, f"split into 'command: {words[0]}' and its other words, before 'args'")


def _exclude(path: str, value: Any, servers: dict[str, dict[str, Any]], notes: Notes) -> None:
    """The backend's ``exclude_tools``: ``mcp__<server>__<tool>`` of a converted server joins
    that server's ``tools.deny``; anything else has nothing to filter in Conclave."""
    if not isinstance(value, list):
        notes.dropped(path, f"expected a list of tool names, got {_kind(value)}")
        return
    for i, name in enumerate(value):
        where = f"{path}[{i}]"
        server = None
        if isinstance(name, str) and name.startswith("mcp__") and "__" in name[5:]:
            server = servers.get(name[5:].split("__", 1)[0])
        if server is None:
            notes.dropped(
                where,
                "names no tool of an MCP server carried over (Conclave's own tools are not "
                "filtered by name)",
            )
            continue
        tools = server.setdefault("tools", {})
        deny = tools.setdefault("deny", [])
        if isinstance(deny, list) and _tool(name) not in deny:
            deny.append(_tool(name))
        notes.changed(where, f"now in 'tools.deny' of the MCP server {server.get('name')!r}")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"
