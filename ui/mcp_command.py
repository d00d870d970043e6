"""``conclave mcp list [--config PATH]``: start the configured MCP servers, list their tools
with their read-only flag, and stop them.

The servers start as they would in a run (the same actors, environment and timeouts), all at
once; each is listed once its first start is over. Exit 0 when every server started, 1 when
one could not (its reason and stderr are printed) or stdout cannot take the list (closed
before the command started, or full: :mod:`ui.streams`), 2 for a config that does not load.
Imports only argparse at start-up (``conclave --help`` stays fast).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conclave.actors.mcp.confine import ServerGrants
    from conclave.actors.mcp.server import McpServers
    from conclave.config.schema import ConclaveConfig
    from conclave.config.schema.mcp import McpServerConfig

__all__ = ["add_mcp_command", "list_servers", "mcp_list_command", "render"]


def add_mcp_command(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``mcp`` on the ``conclave`` subcommands ``sub``."""
    mcp = sub.add_parser("mcp", help="the configured MCP servers: list their tools")
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list",
        help="start the configured MCP servers, list their tools (read-only or not), stop them",
    )
    listing.add_argument(
        "--config",
        metavar="PATH",
        help="the config (default: .conclave/config.yaml, then ~/.config/conclave/config.yaml)",
    )
    listing.set_defaults(handler=lambda args, _parser: mcp_list_command(args.config))


def mcp_list_command(config_path: str | None) -> int:
    """Load the config, start its servers, print their tools; see the module docstring."""
    import trio

    from conclave.actors.mcp.confine import config_grants
    from conclave.config.discovery import discover_config
    from conclave.config.loader import ConfigError, read_config
    from conclave.ui.exit_codes import ExitCode
    from conclave.ui.streams import cannot_write, write_stdout

    found = discover_config(config_path)
    if found.path is None:
        print("conclave: no config file found; give one with --config", file=sys.stderr)
        return ExitCode.USAGE
    try:
        config = read_config(found.path).config
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return ExitCode.USAGE
    servers = configured(config)
    if not servers:
        listing, ok = f"{found.path}: no mcp_servers configured\n", True
    else:
        listing, ok = trio.run(list_servers, servers, config_grants(config))
    why = write_stdout(listing, end="")
    if why is not None:
        return cannot_write("conclave mcp list", "the list", why)
    return ExitCode.OK if ok else ExitCode.FAILED


def configured(config: ConclaveConfig) -> list[tuple[str, McpServerConfig]]:
    """Every server of the config by key: shared ones by name, an agent's as ``agent/name``."""
    servers: list[tuple[str, McpServerConfig]] = [(s.name, s) for s in config.mcp_servers]
    for agent in config.agents:
        servers += [(f"{agent.id}/{s.name}", s) for s in agent.mcp_servers]
    return servers


async def list_servers(
    servers: list[tuple[str, McpServerConfig]], grants: ServerGrants
) -> tuple[str, bool]:
    """Start ``servers`` (confined ones seeing ``grants``), list their tools (:func:`render`),
    stop them; the listing, and whether all started."""
    from conclave.actors.mcp.server import spawn_listed
    from conclave.runtime import open_actor_system

    async with open_actor_system(name="mcp-list") as system:
        running = spawn_listed(system, servers, grants)
        await running.settled()
        return render(running), all(s.failure is None for s in running.all())


def render(servers: McpServers) -> str:
    """One block per server: its tools, ``ro`` for read-only, or why it did not start."""
    from conclave.actors.mcp.server import tool_name

    lines: list[str] = []
    for state in servers.all():
        if state.failure is not None:
            lines.append(f"{state.key}: FAILED: {state.failure}")
            stderr = state.stderr.text(state.secrets())
            lines += [f"  stderr: {line}" for line in stderr.splitlines()[-20:]]
            continue
        offered = state.offered()
        lines.append(f"{state.key}: {len(offered)} tool{'' if len(offered) == 1 else 's'}")
        width = max((len(tool_name(state.config.name, t.name)) for t in offered), default=0)
        for tool in offered:
            flag = "ro" if state.config.is_read_only(tool.name, tool.read_only_hint) else "rw"
            name = tool_name(state.config.name, tool.name)
            description = " ".join(tool.description.split())
            if len(description) > 70:
                description = description[:69] + "…"
            lines.append(f"  {flag}  {name:<{width}}  {description}")
    return "\n".join(lines) + "\n"
