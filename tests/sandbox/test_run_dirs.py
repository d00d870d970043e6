"""What an agent's shell sees of the run's own directories, in both sandboxes: every answer
snapshot, read-only (one published after the sandbox opened too), and neither the event log
nor the other agents' live workspaces nor the copies being staged: those are covered by
empty read-only directories, even inside a writable context path. The agent's own workspace
inside them stays writable.

Real bubblewrap and a real Docker engine (see conftest: skipped saying why without them,
failed under CI)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import docker
import pytest

from conclave.actors.sandbox import Mount, RunDirs, Sandbox, open_sandbox
from conclave.actors.sandbox.docker import DockerSandbox
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind
from tests.sandbox.conftest import containers_of

# Every spec that opens the Docker engine runs on the same xdist worker, one at a time:
# opening it removes every orphaned container, including those the orphan specs make to
# see them removed.
pytestmark = pytest.mark.xdist_group("docker")


@attrs.frozen(kw_only=True)
class Run:
    """A run's working directory as the workspace layout makes it (workdir = log dir)."""

    root: Path
    workspace: Path
    """Agent a1's."""
    snapshot: Path
    """A peer's published answer: ``snapshots/agent2.1/notes.txt``."""

    @property
    def run_dirs(self) -> RunDirs:
        return RunDirs(
            shared=(self.root / "snapshots",),
            hidden=(self.root, self.root / "workspaces", self.root / "snapshots" / ".staging"),
        )


@pytest.fixture
def a_run(tmp_path: Path) -> Run:
    root = (tmp_path / "run").resolve()
    for d in ("workspaces/a1", "workspaces/a2", "snapshots/agent2.1", "snapshots/.staging/a2"):
        (root / d).mkdir(parents=True)
    (root / "events.jsonl").write_text('{"kind": "run_started"}\n')
    (root / "workspaces/a2/draft.txt").write_text("a2 at work\n")
    (root / "snapshots/.staging/a2/draft.txt").write_text("staged\n")
    snapshot = root / "snapshots/agent2.1/notes.txt"
    snapshot.write_text("by a2\n")
    return Run(root=root, workspace=root / "workspaces/a1", snapshot=snapshot)


KINDS = [
    pytest.param(SandboxKind.LOCAL, id="bubblewrap"),
    pytest.param(SandboxKind.DOCKER, id="docker"),
]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> SandboxKind:
    chosen: SandboxKind = request.param
    # The real tool for each, or a skip (a failure under CI) saying what is missing.
    request.getfixturevalue("engine" if chosen is SandboxKind.DOCKER else "bwrap")
    return chosen


@asynccontextmanager
async def sandbox_in(
    kind: SandboxKind, run: Run, run_id: str, mounts: tuple[Mount, ...] = ()
) -> AsyncIterator[Sandbox]:
    config = SandboxConfig(type=kind, memory_mb=256, pids=64)
    async with open_sandbox(
        config,
        run_id=run_id,
        agent="a1",
        workspace=run.workspace,
        mounts=mounts,
        run_dirs=run.run_dirs,
    ) as sandbox:
        yield sandbox


async def sh(sandbox: Sandbox, command: str, run: Run) -> tuple[int | None, str]:
    outcome = await sandbox.run_shell(command, cwd=run.workspace, timeout=30)
    return outcome.exit_code, outcome.output


async def test_a_peers_snapshot_is_readable_and_not_writable(
    kind: SandboxKind, a_run: Run, run_id: str
) -> None:
    async with sandbox_in(kind, a_run, run_id) as sandbox:
        read = await sh(sandbox, f"cat {a_run.snapshot}", a_run)
        write = await sh(sandbox, f"echo forged > {a_run.snapshot}", a_run)
        remove = await sh(sandbox, f"rm {a_run.snapshot}", a_run)

    assert read == (0, "by a2\n")
    for code, output in (write, remove):
        assert code != 0
        assert "Read-only file system" in output
    assert a_run.snapshot.read_text() == "by a2\n"


async def test_a_snapshot_published_after_the_sandbox_opened_is_readable(
    kind: SandboxKind, a_run: Run, run_id: str
) -> None:
    async with sandbox_in(kind, a_run, run_id) as sandbox:
        await sh(sandbox, "true", a_run)  # the container (or nothing, for bubblewrap) is up
        staged = a_run.root / "snapshots/.staging/a3"
        staged.mkdir()
        (staged / "plan.md").write_text("by a3\n")
        os.rename(staged, a_run.root / "snapshots/agent3.1")  # as the coordinator publishes

        read = await sh(sandbox, f"cat {a_run.root}/snapshots/agent3.1/plan.md", a_run)

    assert read == (0, "by a3\n")


async def test_the_event_log_and_other_live_workspaces_are_hidden(
    kind: SandboxKind, a_run: Run, run_id: str
) -> None:
    root = a_run.root
    async with sandbox_in(kind, a_run, run_id) as sandbox:
        log = await sh(sandbox, f"cat {root}/events.jsonl", a_run)
        peer = await sh(sandbox, f"cat {root}/workspaces/a2/draft.txt", a_run)
        staged = await sh(sandbox, f"cat {root}/snapshots/.staging/a2/draft.txt", a_run)
        listing = await sh(sandbox, f"ls -A {root}/workspaces {root}/snapshots/.staging", a_run)

    for code, output in (log, peer, staged):
        assert code != 0
        assert "No such file or directory" in output
    assert listing[1].split() == [
        f"{root}/snapshots/.staging:",
        f"{root}/workspaces:",
        "a1",
    ]


async def test_the_agents_own_workspace_stays_writable(
    kind: SandboxKind, a_run: Run, run_id: str
) -> None:
    async with sandbox_in(kind, a_run, run_id) as sandbox:
        wrote = await sh(sandbox, "echo mine > notes.txt", a_run)

    assert wrote[0] == 0, wrote[1]
    assert (a_run.workspace / "notes.txt").read_text() == "mine\n"


async def test_a_writable_context_path_holding_the_run_leaves_its_log_untouchable(
    kind: SandboxKind, a_run: Run, run_id: str
) -> None:
    project = a_run.root.parent  # --context .:w, with the run's directories inside it
    mounts = (Mount(path=project, writable=True),)
    async with sandbox_in(kind, a_run, run_id, mounts) as sandbox:
        outside = await sh(sandbox, f"echo ok > {project}/README", a_run)
        log = await sh(sandbox, f"echo forged >> {a_run.root}/events.jsonl", a_run)
        peer = await sh(sandbox, f"echo forged > {a_run.root}/workspaces/a2/draft.txt", a_run)
        snapshot = await sh(sandbox, f"echo forged > {a_run.snapshot}", a_run)
        read = await sh(sandbox, f"cat {a_run.snapshot}", a_run)

    assert outside[0] == 0, outside[1]
    # Refused, whichever way the shell words it (read-only, or no such directory under the
    # cover): what counts is that the files are as they were.
    assert all(code != 0 for code, _ in (log, peer, snapshot))
    assert read == (0, "by a2\n")
    assert (a_run.root / "events.jsonl").read_text() == '{"kind": "run_started"}\n'
    assert (a_run.root / "workspaces/a2/draft.txt").read_text() == "a2 at work\n"


async def test_a_remount_keeps_the_run_dirs(
    kind: SandboxKind, a_run: Run, run_id: str, tmp_path: Path
) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    async with sandbox_in(kind, a_run, run_id, (Mount(path=context, writable=False),)) as box:
        await box.remount((Mount(path=context, writable=True),))
        read = await sh(box, f"cat {a_run.snapshot}", a_run)
        log = await sh(box, f"cat {a_run.root}/events.jsonl", a_run)

    assert read == (0, "by a2\n")
    assert log[0] != 0


async def test_docker_covers_only_what_a_mount_would_show(
    engine: docker.DockerClient, a_run: Run, run_id: str
) -> None:
    """Without a context path around it, the run's directory is never mounted: nothing to
    cover there, so the container gets the snapshots and .staging's cover, not a tmpfs over
    the log directory."""
    async with sandbox_in(SandboxKind.DOCKER, a_run, run_id) as sandbox:
        assert isinstance(sandbox, DockerSandbox)
        container = sandbox.container
        assert container is not None
        container.reload()
        mounts = {m["Destination"]: m["Type"] for m in container.attrs["Mounts"]}
        tmpfs = container.attrs["HostConfig"].get("Mounts") or []

    assert mounts[str(a_run.root / "snapshots")] == "bind"
    assert mounts[str(a_run.workspace)] == "bind"
    covers = sorted(m["Target"] for m in tmpfs if m["Type"] == "tmpfs")
    assert covers == [str(a_run.root / "snapshots" / ".staging")]
    assert await _no_containers(engine, run_id)


async def _no_containers(engine: docker.DockerClient, run_id: str) -> bool:
    import trio

    return await trio.to_thread.run_sync(containers_of, engine, run_id) == []
