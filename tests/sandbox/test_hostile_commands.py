"""Hostile shell commands against the local sandbox under bubblewrap: a command the model
was talked into (a prompt injection in a file, a peer's answer) tries to read the user's
credentials, reach the network, or exhaust the machine. Each case says what stops it.

The credentials live in a fake home directory (tests/fake_home.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from conclave.actors.sandbox import Mount
from conclave.actors.sandbox.local import LocalSandbox
from conclave.config.schema.sandbox import SandboxConfig
from tests.fake_home import CREDENTIALS, fake_home


@pytest.fixture
def home() -> Iterator[Path]:
    with fake_home() as root:
        yield root


def sandbox(
    workspace: Path, *, mounts: tuple[Mount, ...] = (), config: SandboxConfig | None = None
) -> LocalSandbox:
    confined = LocalSandbox(workspace=workspace, mounts=mounts, config=config or SandboxConfig())
    assert confined.confined
    return confined


async def shell(box: LocalSandbox, command: str, cwd: Path, timeout: float = 20) -> str:
    outcome = await box.run_shell(command, cwd=cwd, timeout=timeout)
    return f"exit {outcome.exit_code}\n{outcome.output}"


# --- the home directory -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CREDENTIALS))
async def test_a_command_cannot_read_a_credential_file_of_the_home_directory(
    bwrap: str, workspace: Path, home: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(home))
    output = await shell(sandbox(workspace), f"cat {home / name}; cat ~/{name}", workspace)
    assert "fake-" not in output
    assert "No such file or directory" in output


async def test_the_home_directory_is_not_there_at_all(
    bwrap: str, workspace: Path, home: Path
) -> None:
    output = await shell(sandbox(workspace), f"ls -a {home}", workspace)
    assert "No such file or directory" in output
    assert ".ssh" not in output


async def test_a_context_path_inside_the_home_directory_is_readable_and_nothing_beside_it(
    bwrap: str, workspace: Path, home: Path
) -> None:
    project = home / "project"
    box = sandbox(workspace, mounts=(Mount(path=project, writable=False),))
    readme = await shell(box, f"cat {project}/README", workspace)
    listed = await shell(box, f"ls -a {home}", workspace)
    key = await shell(box, f"cat {home}/.ssh/id_ed25519", workspace)
    assert readme == "exit 0\nthe project's readme\n"
    assert listed.split() == ["exit", "0", ".", "..", "project"]  # made to hold the mount
    assert "fake-ssh-key" not in key and "No such file or directory" in key


async def test_the_root_home_and_system_state_directories_are_not_there(
    bwrap: str, workspace: Path
) -> None:
    output = await shell(sandbox(workspace), "ls / | tr '\\n' ' '", workspace)
    shown = set(output.split()[2:])
    assert shown.isdisjoint({"root", "home", "var", "run", "mnt", "srv", "media", "work"})
    assert {"usr", "etc", "tmp", "dev", "proc"} <= shown


async def test_a_command_cannot_write_outside_its_mounts(
    bwrap: str, workspace: Path, home: Path
) -> None:
    output = await shell(sandbox(workspace), f"touch /escape; echo x >> {home}/.bashrc", workspace)
    assert "touch: cannot touch '/escape': Read-only file system" in output
    assert not (home / ".bashrc").exists()


# --- the network --------------------------------------------------------------------------


def _connect(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('reached')"
    return f'python3 -c "{code}"'


async def test_a_command_cannot_reach_the_hosts_loopback(
    bwrap: str, workspace: Path, listener: int
) -> None:
    output = await shell(sandbox(workspace), _connect(listener), workspace)
    assert "reached" not in output
    assert "Connection refused" in output  # its own loopback, where nothing listens


async def test_network_true_lets_a_command_reach_the_network(
    bwrap: str, workspace: Path, listener: int
) -> None:
    box = sandbox(workspace, config=SandboxConfig(network=True))
    assert await shell(box, _connect(listener), workspace) == "exit 0\nreached\n"


# --- resources ----------------------------------------------------------------------------


async def test_a_cpu_spin_is_killed_at_its_cpu_time_limit(bwrap: str, workspace: Path) -> None:
    box = sandbox(workspace, config=SandboxConfig(cpu_seconds=1))
    started = trio.current_time()
    outcome = await box.run_shell("while :; do :; done", cwd=workspace, timeout=20)
    assert not outcome.timed_out
    assert outcome.exit_code == 128 + 9  # SIGKILL at the hard limit
    assert trio.current_time() - started < 10


async def test_an_allocation_past_the_memory_limit_fails(bwrap: str, workspace: Path) -> None:
    box = sandbox(workspace, config=SandboxConfig(memory_mb=64))
    output = await shell(box, "python3 -c 'x = bytearray(200 * 2**20); print(\"kept\")'", workspace)
    assert "MemoryError" in output
    assert "kept" not in output


_FORKS = """
import sys, trio
from pathlib import Path
from conclave.actors.sandbox.local import LocalSandbox
from conclave.config.schema.sandbox import SandboxConfig
from tests.fake_home import CREDENTIALS, fake_home

async def main() -> None:
    workspace = Path(sys.argv[1])
    box = LocalSandbox(workspace=workspace, mounts=(), config=SandboxConfig(pids=16))
    command = "n=0; for i in $(seq 60); do sleep 5 & n=$((n+1)); done; echo started $n"
    outcome = await box.run_shell(command, cwd=workspace, timeout=30)
    print(outcome.output)

trio.run(main)
"""


@contextlib.contextmanager
def _traversable_by_others(*paths: Path) -> Iterator[None]:
    """Let other users list ``paths`` and pass through every directory above them while the
    block runs, restoring each mode after: a checkout in ``mktemp -d`` (mode 700) hides its
    venv and the project from ``nobody``, whose Python then cannot import them."""
    changed: dict[Path, int] = {}
    wanted = [(path, stat.S_IROTH | stat.S_IXOTH) for path in paths]  # listed by imports
    wanted += [(parent, stat.S_IXOTH) for path in paths for parent in path.parents]
    for directory, needed in wanted:
        mode = stat.S_IMODE(directory.stat().st_mode)
        if directory not in changed and mode & needed != needed:
            changed[directory] = mode
            os.chmod(directory, mode | needed)
    try:
        yield
    finally:
        for directory, mode in changed.items():
            os.chmod(directory, mode)


def test_a_fork_bomb_stops_at_the_process_limit(bwrap: str, home: Path) -> None:
    """Run as ``nobody``: the kernel exempts root from the process limit (docs/security.md).
    Bounded: 60 ``sleep`` at most, so it cannot hurt the machine even with no limit."""
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "setpriv (util-linux) runs the sandbox as another user"
    workspace = home / "workspace"  # outside /tmp/pytest-of-root, which nobody cannot enter
    workspace.mkdir()
    os.chmod(home, 0o755)
    os.chmod(workspace, 0o777)
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    repository = Path(__file__).resolve().parents[2]
    with _traversable_by_others(repository, Path(sys.prefix)):
        done = subprocess.run(
            [*drop, sys.executable, "-c", _FORKS, str(workspace)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=repository,
        )
    assert done.returncode == 0, done.stderr
    assert "Cannot fork" in done.stdout
    assert "started 60" not in done.stdout
