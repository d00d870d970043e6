"""Real MCP servers nobody on this project wrote: ``mcp-server-time`` and ``mcp-server-git``
(PyPI, the dev extra), ``@modelcontextprotocol/server-filesystem`` and
``@modelcontextprotocol/server-everything`` (npm; ``.ci/run`` installs them). A missing one
skips its tests here, and fails them under CI=true."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import attrs
import mcp.client.stdio
import pytest

from conclave.actors.mcp.confine import ServerGrants
from conclave.actors.mcp.server import McpServers, McpServerState, spawn_listed
from conclave.actors.sandbox.protocol import Mount
from conclave.config.schema.mcp import McpServerConfig, StdioMcpServer
from conclave.runtime import MemoryTap, open_actor_system


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
def quick_termination(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP SDK waits 2 s for a server to exit once its stdin is closed before it sends
    SIGTERM: 0.1 s here, for specs whose server will not exit by itself (it hangs, or is
    in the middle of a long operation)."""
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", 0.1)


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


def granting(*paths: Path) -> ServerGrants:
    """Grants that show ``paths`` to a confined server, writable (a run's writable context
    paths in its presentation)."""
    return ServerGrants(mounts=tuple(Mount(path=p, writable=True) for p in paths))


@contextlib.asynccontextmanager
async def open_started(
    *configs: McpServerConfig, sees: tuple[Path, ...] = ()
) -> AsyncIterator[Started]:
    """The servers started (or failed) as a run starts them, confined ones seeing ``sees``
    (and their own installation); stopped on the way out."""
    tap = MemoryTap()
    async with open_actor_system(name="mcp-test", taps=[tap]) as system:
        servers = spawn_listed(system, [(c.name, c) for c in configs], granting(*sees))
        await servers.settled()
        yield Started(servers, tap)


HTTP_SERVER = Path(__file__).parent / "http_server.py"
_LISTEN_WAIT_S = 30.0


@attrs.frozen(kw_only=True)
class HttpServer:
    """The specs' streamable-HTTP server (tests/mcp/http_server.py), running as a process."""

    url: str
    """Its MCP endpoint, ``http://127.0.0.1:<port>/mcp``."""
    token: str
    """The bearer token it accepts."""
    log: Path

    def seen(self) -> list[str]:
        """The ``Authorization`` header of every request it got, in order (``-``: none)."""
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    """The server started; ready once it printed its port (it binds before it prints)."""
    token = "spec-token-7f3a9c"
    log = tmp_path / "http-server-headers.log"
    process = subprocess.Popen(
        [sys.executable, str(HTTP_SERVER), "--token", token, "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        ready, _, _ = select.select([process.stdout], [], [], _LISTEN_WAIT_S)
        line = process.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            process.kill()
            pytest.fail(f"the HTTP MCP server did not start: {process.stderr.read()[-2000:]}")
        yield HttpServer(url=f"http://127.0.0.1:{int(line)}/mcp", token=token, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
