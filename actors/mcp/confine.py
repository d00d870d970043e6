"""A stdio MCP server confined as the agents' shell commands are: inside bubblewrap, seeing
the system directories, its own installation, and the run's context paths with the grants
the agents have (read-only during coordination; the writable ones writable once the
presenter's writes open; an agent's own server also that agent's workspace), the run's own
directories covered, a private ``/tmp``, and no network unless ``sandbox.network``. So what
it writes lands in a tracked context path, the agent's workspace, or nowhere on the host.

Its own installation is found from its command: the executable, the file a symlink points
to, and the interpreter its ``#!`` line names (``#!/usr/bin/env node`` too), each shown
read-only where it is not a system directory: for a program in a ``bin`` directory, that
prefix's ``bin`` and ``lib`` (a virtualenv, ``~/.local``, an nvm node: not ``share``, where
keyrings live); for any other file, its package (the nearest directory above it with a
``package.json`` or ``pyproject.toml``), else its directory. An argument that names an
existing file (``python server.py``) is shown the same way; a directory argument is not:
grant it as a context path. Never the home directory itself, nor a directory above it.

A server the config trusts (``trust: true``) runs unconfined; one that cannot be confined
(no working bubblewrap) is refused, saying so.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from conclave.config.schema.mcp import StdioMcpServer
from conclave.config.schema.root import ConclaveConfig

if TYPE_CHECKING:
    # The sandbox package loads the docker SDK (~0.2 s): imported when a server starts, so
    # a run that only imports this module never pays for it.
    from conclave.actors.sandbox.protocol import Mount

__all__ = [
    "NO_GRANTS",
    "NotConfinable",
    "ServerGrants",
    "config_grants",
    "confined_argv",
    "install_paths",
]

_PACKAGE_MARKERS = ("package.json", "pyproject.toml")
_PACKAGE_LEVELS = 4
"""How far above a script its package root is looked for."""
_SHEBANG_BYTES = 256


@attrs.frozen(kw_only=True)
class ServerGrants:
    """What a confined server sees besides the system and its own installation."""

    mounts: tuple[Mount, ...] = ()
    """The context paths, read-only unless writable now."""
    covers: tuple[Path, ...] = ()
    """The run's own directories inside them, covered by empty read-only directories."""
    network: bool = False


NO_GRANTS = ServerGrants()
"""Nothing but the system and the server's installation."""


def config_grants(config: ConclaveConfig) -> ServerGrants:
    """What servers started outside a run see (``conclave mcp list``, a REPL session's):
    the config's context paths, read-only."""
    from conclave.actors.workspace.grants import context_mounts

    orchestrator = config.orchestrator
    return ServerGrants(
        mounts=context_mounts(orchestrator.context_paths, writes_open=False),
        network=orchestrator.sandbox.network,
    )


class NotConfinable(Exception):
    """The server cannot be confined here and the config does not trust it."""


def bubblewrap() -> str | None:
    """bubblewrap's path where it works here (probed once per process), or ``None``."""
    from conclave.actors.sandbox.local import bubblewrap as probe

    return probe()


def _under(path: Path, roots: Iterable[str]) -> bool:
    text = str(path)
    return any(text == root or text.startswith(root + "/") for root in roots)


def _too_wide(path: Path) -> bool:
    """The home directory, or a directory that holds it (``/``, ``/home``)."""
    home = Path.home().resolve()
    return path == home or path in home.parents


def _shebang(path: Path) -> list[str]:
    """The interpreter line of a script (``['/usr/bin/env', 'node']``), or ``[]``."""
    try:
        with path.open("rb") as f:
            head = f.read(_SHEBANG_BYTES)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()


def _interpreter(line: list[str], search_path: str) -> Path | None:
    if not line:
        return None
    program: str | None = line[0]
    if Path(line[0]).name == "env":
        names = [word for word in line[1:] if not word.startswith("-") and "=" not in word]
        program = shutil.which(names[0], path=search_path) if names else None
    return Path(program) if program is not None and os.path.isabs(program) else None


def _roots_of(path: Path) -> Iterator[Path]:
    """What to show for one file of the installation (see the module docstring)."""
    if path.parent.name == "bin":
        prefix = path.parent.parent
        if not _too_wide(prefix):
            yield from (prefix / part for part in ("bin", "lib", "lib64", "pyvenv.cfg"))
            return
        yield path
        return
    for level, directory in enumerate(path.parents):
        if level >= _PACKAGE_LEVELS or _too_wide(directory):
            break
        if any((directory / marker).exists() for marker in _PACKAGE_MARKERS):
            yield directory
            return
    yield path if _too_wide(path.parent) else path.parent


def install_paths(config: StdioMcpServer, program: Path, search_path: str) -> tuple[Path, ...]:
    """The host paths that hold ``config``'s server ``program``, its interpreter and its
    script arguments, outside the system directories (see the module docstring)."""
    from conclave.actors.sandbox.bwrap import SYSTEM_DIRS

    cwd = config.cwd or Path.cwd()
    start = [program]
    for arg in config.args:
        candidate = cwd / arg
        if candidate.is_file():
            start.append(candidate)
    shown: dict[Path, None] = {}
    seen: set[Path] = set()
    todo = [p.absolute() for p in start]
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        real = file.resolve()
        for each in dict.fromkeys((file, real)):
            if not _under(each, SYSTEM_DIRS):
                shown.update(dict.fromkeys(p for p in _roots_of(each) if p.exists()))
        interpreter = _interpreter(_shebang(real), search_path)
        if interpreter is not None:
            todo.append(interpreter)
    return tuple(shown)


def confined_argv(
    config: StdioMcpServer,
    grants: ServerGrants,
    command: list[str],
    *,
    program: Path,
    search_path: str,
) -> list[str]:
    """``command`` (the server's, as it would run unconfined; ``program`` is its executable)
    inside bubblewrap with ``grants`` and the server's installation; raises
    :class:`NotConfinable` without a working bubblewrap."""
    from conclave.actors.sandbox.bwrap import Confinement, bwrap_argv
    from conclave.actors.sandbox.local import BWRAP_HELP
    from conclave.actors.sandbox.protocol import Mount

    bwrap = bubblewrap()
    if bwrap is None:
        raise NotConfinable(
            f"the MCP server {config.name!r} cannot be confined: bubblewrap is not installed "
            f"or does not work here; {BWRAP_HELP}; or, if you trust this server with your "
            "files, your credentials and the network, set trust: true for it"
        )
    installed = tuple(
        Mount(path=p, writable=False) for p in install_paths(config, program, search_path)
    )
    confinement = Confinement(
        mounts=(*installed, *grants.mounts),
        covers=grants.covers,
        cwd=config.cwd or Path.cwd(),
        network=grants.network,
        # The SDK starts the server from a worker thread, which may end while the server
        # runs; the SDK stops the server itself (stdin closed, then its process group killed).
        die_with_parent=False,
    )
    return bwrap_argv(bwrap, confinement, command)
