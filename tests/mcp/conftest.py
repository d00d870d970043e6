"""Real MCP servers nobody on this project wrote: ``mcp-server-time`` and ``mcp-server-git``
(PyPI, the dev extra), ``@modelcontextprotocol/server-filesystem`` and
``@modelcontextprotocol/server-everything`` (npm; ``.ci/run`` installs them). A missing one
skips its tests here, and fails them under CI=true."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from actors.mcp.server import McpServers, McpServerState, spawn_listed
from config.schema.mcp import McpServerConfig, StdioMcpServer
from runtime import MemoryTap, open_actor_system


def missing(reason: str) -> None:
    """Skip the test saying why, or fail it under CI."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run installs it)")
    pytest.skip(reason)


def program(name: str, install: str) -> str:
    """The server's executable: the venv's own for PyPI servers, else on PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        missing(f"the MCP server {name} is not installed ({install})")
    assert found is not None
    return found


@pytest.fixture
def time_server() -> str:
    return program("mcp-server-time", "pip install mcp-server-time")


@pytest.fixture
def git_server() -> str:
    return program("mcp-server-git", "pip install mcp-server-git")


@pytest.fixture
def fs_server() -> str:
    return program(
        "mcp-server-filesystem", "npm install -g @modelcontextprotocol/server-filesystem"
    )


@pytest.fixture
def everything_server() -> str:
    return program(
        "mcp-server-everything", "npm install -g @modelcontextprotocol/server-everything"
    )


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A directory the filesystem server serves: two files."""
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("alpha notes\n")
    (root / "plan.md").write_text("# plan\n")
    return root.resolve()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit."""
    root = tmp_path / "repo"
    root.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=Tester"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    (root / "README").write_text("hello\n")
    subprocess.run([*git, "add", "README"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "the first commit"], cwd=root, check=True)
    return root.resolve()


def stdio(name: str, command: str, *args: str, **fields: object) -> StdioMcpServer:
    return StdioMcpServer(name=name, command=command, args=args, **fields)  # type: ignore[arg-type]


class Started:
    """Servers started in an actor system of their own, with the events it recorded."""

    def __init__(self, servers: McpServers, tap: MemoryTap) -> None:
        self.servers = servers
        self.tap = tap

    def state(self, key: str) -> McpServerState:
        return next(s for s in self.servers.all() if s.key == key)


@contextlib.asynccontextmanager
async def open_started(*configs: McpServerConfig) -> AsyncIterator[Started]:
    """The servers started (or failed) as a run starts them; stopped on the way out."""
    tap = MemoryTap()
    async with open_actor_system(name="mcp-test", taps=[tap]) as system:
        servers = spawn_listed(system, [(c.name, c) for c in configs])
        await servers.settled()
        yield Started(servers, tap)
