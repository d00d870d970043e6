"""The docker sandbox against a real engine: one confined, labelled container per agent,
one shell session, read-only mounts until a remount recreates the container, no orphans."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import docker
import pytest
import trio
from docker.models.containers import Container

from conclave.actors.sandbox import Mount, Sandbox, open_docker_engine, open_sandbox
from conclave.actors.sandbox import docker as docker_sandbox_module
from conclave.actors.sandbox.docker import DockerSandbox
from conclave.actors.sandbox.engine import (
    LABEL_AGENT,
    LABEL_OWNER_PID,
    LABEL_OWNER_STARTED,
    LABEL_RUN,
    process_started,
)
from conclave.config.schema.sandbox import SandboxConfig, SandboxEnv, SandboxKind
from tests.sandbox.conftest import containers_of

# Every spec that opens the Docker engine runs on the same xdist worker, one at a time:
# opening it removes every orphaned container, including those the orphan specs make to
# see them removed.
pytestmark = pytest.mark.xdist_group("docker")

DOCKER = SandboxConfig(type=SandboxKind.DOCKER, memory_mb=256, pids=64)


@asynccontextmanager
async def docker_sandbox(
    run_id: str, workspace: Path, mounts: tuple[Mount, ...] = (), config: SandboxConfig = DOCKER
) -> AsyncIterator[DockerSandbox]:
    async with open_sandbox(
        config, run_id=run_id, agent="agent1", workspace=workspace, mounts=mounts
    ) as sandbox:
        assert isinstance(sandbox, DockerSandbox)
        yield sandbox


def container_of(sandbox: DockerSandbox) -> Container:
    container = sandbox.container
    assert container is not None
    container.reload()
    return container


@pytest.fixture
def context(tmp_path: Path) -> Path:
    path = tmp_path / "context"
    path.mkdir()
    (path / "notes.txt").write_text("keep me\n")
    return path.resolve()


async def run(sandbox: Sandbox, command: str, cwd: Path, timeout: float = 20) -> str:
    outcome = await sandbox.run_shell(command, cwd=cwd, timeout=timeout)
    return outcome.output


# --- the container ------------------------------------------------------------------------


async def test_the_container_is_labelled_with_the_run_the_owner_pid_and_the_agent(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        labels = container_of(sandbox).labels
    assert labels[LABEL_RUN] == run_id
    assert labels[LABEL_OWNER_PID] == str(os.getpid())
    assert labels[LABEL_OWNER_STARTED] == process_started(os.getpid())
    assert labels[LABEL_AGENT] == "agent1"


async def test_the_container_is_confined(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        host = container_of(sandbox).attrs["HostConfig"]
        config = container_of(sandbox).attrs["Config"]
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == 256 * 1024 * 1024
    assert host["PidsLimit"] == 64
    assert host["MemorySwap"] == host["Memory"]  # no swap beyond the memory limit
    assert host["ReadonlyRootfs"] is True
    assert list(host["Tmpfs"]) == ["/tmp"]
    assert host["Init"] is True  # an init reaps what commands leave, within the pid limit
    assert config["User"] == f"{os.getuid()}:{os.getgid()}"
    assert config["WorkingDir"] == str(workspace)
    assert "HOME=/tmp" in config["Env"]


async def test_the_container_has_no_network(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        output = await run(sandbox, "tail -n +3 /proc/net/dev | cut -d: -f1", workspace)
    assert output.split() == ["lo"]


async def test_network_true_gives_the_container_a_network(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    config = attrs.evolve(DOCKER, network=True)
    async with docker_sandbox(run_id, workspace, config=config) as sandbox:
        mode = container_of(sandbox).attrs["HostConfig"]["NetworkMode"]
        output = await run(sandbox, "tail -n +3 /proc/net/dev | cut -d: -f1", workspace)
    assert mode == "bridge"
    assert "eth0" in output.split()


async def test_the_container_gets_only_the_variables_env_allow_names(
    engine: docker.DockerClient, run_id: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "gh-for-the-container")
    monkeypatch.setenv("CONCLAVE_UNNAMED", "not-asked-for")
    config = attrs.evolve(DOCKER, env=SandboxEnv(allow=("GITHUB_TOKEN",)))
    async with docker_sandbox(run_id, workspace, config=config) as sandbox:
        output = await run(sandbox, "env", workspace)
    assert "GITHUB_TOKEN=gh-for-the-container" in output
    assert "not-asked-for" not in output


async def test_the_container_kills_a_process_at_its_cpu_time_limit(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    config = attrs.evolve(DOCKER, cpu_seconds=1)
    async with docker_sandbox(run_id, workspace, config=config) as sandbox:
        outcome = await sandbox.run_shell("while :; do :; done", cwd=workspace, timeout=20)
    assert not outcome.timed_out
    assert outcome.exit_code == 128 + 9


async def test_commands_share_one_shell_session(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        first = await run(sandbox, "echo $PPID", workspace)
        second = await run(sandbox, "echo $PPID", workspace)
    assert first == second


# --- commands -----------------------------------------------------------------------------


async def test_output_interleaves_and_the_exit_code_is_the_commands(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        outcome = await sandbox.run_shell(
            "echo one; echo two >&2; echo three; exit 4", cwd=workspace, timeout=20
        )
    assert (outcome.output, outcome.exit_code) == ("one\ntwo\nthree\n", 4)


async def test_the_workspace_is_writable_at_its_host_path(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        outcome = await sandbox.run_shell("echo hi > made.txt", cwd=workspace, timeout=20)
    assert outcome.exit_code == 0
    assert (workspace / "made.txt").read_text() == "hi\n"


async def test_a_timeout_kills_the_command_and_what_it_started_and_the_session_goes_on(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        outcome = await sandbox.run_shell("sleep 41 & sleep 42", cwd=workspace, timeout=0.5)
        left = await run(sandbox, "ps -o args | grep '^sleep 4' || true", workspace)
    assert (outcome.exit_code, outcome.timed_out) == (None, True)
    assert left == ""


async def test_cancellation_kills_the_command_and_the_session_goes_on(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        with trio.move_on_after(0.5) as scope:
            await sandbox.run_shell("sleep 43 & sleep 44", cwd=workspace, timeout=60)
        left = await run(sandbox, "ps -o args | grep '^sleep 4' || true", workspace)
    assert scope.cancelled_caught
    assert left == ""


async def test_a_container_killed_from_outside_ends_the_call_and_the_next_gets_a_new_one(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        first = container_of(sandbox)
        async with trio.open_nursery() as nursery:

            async def kill_soon() -> None:
                await trio.sleep(0.5)
                await trio.to_thread.run_sync(first.kill)

            nursery.start_soon(kill_soon)
            ended = await sandbox.run_shell("sleep 30", cwd=workspace, timeout=60)
        after = await sandbox.run_shell("echo back", cwd=workspace, timeout=20)
        assert container_of(sandbox).id != first.id
    assert (ended.exit_code, ended.timed_out) == (None, False)
    assert "the sandbox's shell ended" in ended.output
    assert after.output == "back\n"
    assert containers_of(engine, run_id) == []


# --- read-only mounts, then recreated read-write ------------------------------------------


async def test_cp_mv_rm_into_a_read_only_mount_fail_with_read_only_file_system(
    engine: docker.DockerClient, run_id: str, workspace: Path, context: Path
) -> None:
    (workspace / "mine.txt").write_text("mine\n")
    async with docker_sandbox(run_id, workspace, (Mount(path=context, writable=False),)) as box:
        copy = await box.run_shell(f"cp mine.txt {context}/", cwd=workspace, timeout=20)
        move = await box.run_shell(f"mv mine.txt {context}/", cwd=workspace, timeout=20)
        remove = await box.run_shell(f"rm {context}/notes.txt", cwd=workspace, timeout=20)
    for outcome in (copy, move, remove):
        assert outcome.exit_code != 0
        assert "Read-only file system" in outcome.output
    assert sorted(os.listdir(context)) == ["notes.txt"]


async def test_after_a_remount_read_write_cp_mv_rm_work(
    engine: docker.DockerClient, run_id: str, workspace: Path, context: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    async with docker_sandbox(run_id, workspace, (Mount(path=context, writable=False),)) as box:
        await box.remount((Mount(path=context, writable=True),))
        outcome = await box.run_shell(
            f"cp a.txt {context}/ && mv b.txt {context}/ && rm {context}/notes.txt",
            cwd=workspace,
            timeout=20,
        )
    assert outcome.exit_code == 0, outcome.output
    assert sorted(os.listdir(context)) == ["a.txt", "b.txt"]


async def test_a_remount_replaces_the_container(
    engine: docker.DockerClient, run_id: str, workspace: Path, context: Path
) -> None:
    async with docker_sandbox(run_id, workspace, (Mount(path=context, writable=False),)) as box:
        before = container_of(box).name
        await box.remount((Mount(path=context, writable=True),))
        after = containers_of(engine, run_id)
    assert len(after) == 1 and before not in after


async def test_a_read_only_path_inside_a_writable_mount_stays_read_only(
    engine: docker.DockerClient, run_id: str, workspace: Path, context: Path
) -> None:
    protected = context / "protected"
    protected.mkdir()
    mounts = (Mount(path=protected, writable=False), Mount(path=context, writable=True))
    async with docker_sandbox(run_id, workspace, mounts) as box:
        outside = await box.run_shell(f"touch {context}/new", cwd=workspace, timeout=20)
        inside = await box.run_shell(f"touch {protected}/new", cwd=workspace, timeout=20)
    assert outside.exit_code == 0
    assert "Read-only file system" in inside.output


async def test_sandboxes_opened_on_one_engine_each_get_their_own_container(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with open_docker_engine(DOCKER) as shared, contextlib.AsyncExitStack() as stack:
        for agent in ("a1", "a2"):
            await stack.enter_async_context(
                open_sandbox(
                    DOCKER,
                    run_id=run_id,
                    agent=agent,
                    workspace=workspace,
                    mounts=(),
                    engine=shared,
                )
            )
        assert len(await trio.to_thread.run_sync(containers_of, engine, run_id)) == 2
    assert await trio.to_thread.run_sync(containers_of, engine, run_id) == []


async def test_a_closed_sandbox_neither_runs_nor_remounts(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        await sandbox.aclose()
        with pytest.raises(RuntimeError, match="sandbox is closed"):
            await sandbox.run_shell("true", cwd=workspace, timeout=20)
        with pytest.raises(RuntimeError, match="sandbox is closed"):
            await sandbox.remount(())
        assert await trio.to_thread.run_sync(containers_of, engine, run_id) == []


async def test_a_close_while_a_remount_creates_the_container_leaves_no_container(
    engine: docker.DockerClient,
    run_id: str,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with docker_sandbox(run_id, workspace) as sandbox:
        create = sandbox._create

        def create_while_another_task_closes() -> tuple[Container, Any]:
            container = create()
            sandbox._closed = True  # aclose ran meanwhile, and found no container to remove
            return container

        monkeypatch.setattr(sandbox, "_create", create_while_another_task_closes)
        with pytest.raises(RuntimeError, match="sandbox is closed"):
            await sandbox.remount(())
        assert await trio.to_thread.run_sync(containers_of, engine, run_id) == []


async def test_a_slow_removal_does_not_hold_the_close_past_its_bound(
    engine: docker.DockerClient,
    run_id: str,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remove = Container.remove
    engine_answers = threading.Event()
    removed = threading.Event()

    def slow_remove(self: Container, **kwargs: Any) -> None:
        engine_answers.wait(30)  # an engine under load: it answers when the spec says so
        try:
            # By now the engine may have removed the container itself (AutoRemove, once the
            # close let go of its lifeline): this removal then fails with NotFound.
            remove(self, **kwargs)
        finally:
            removed.set()

    async with docker_sandbox(run_id, workspace) as sandbox:
        monkeypatch.setattr(docker_sandbox_module, "_TEARDOWN_S", 0.2)
        monkeypatch.setattr(Container, "remove", slow_remove)
        started = trio.current_time()
        with trio.fail_after(10):
            await sandbox.aclose()
        closing = trio.current_time() - started
    assert not removed.is_set()
    assert closing < 1.5
    engine_answers.set()  # the abandoned removal finishes in its thread
    assert await trio.to_thread.run_sync(removed.wait, 30)
    # The engine may be removing it itself (AutoRemove): our removal then fails with "already
    # in progress" while the container is still listed for a moment (1 CI run in 5 saw it).
    left = await trio.to_thread.run_sync(containers_of, engine, run_id)
    for _ in range(200):  # 10 s at most
        if not left:
            break
        await trio.sleep(0.05)
        left = await trio.to_thread.run_sync(containers_of, engine, run_id)
    assert left == []


# --- no orphans ---------------------------------------------------------------------------


async def test_no_container_is_left_after_a_normal_close(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    async with docker_sandbox(run_id, workspace):
        assert len(containers_of(engine, run_id)) == 1
    assert containers_of(engine, run_id) == []


async def test_no_container_is_left_after_an_exception_inside(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    with pytest.raises(ZeroDivisionError):
        async with docker_sandbox(run_id, workspace):
            1 / 0  # noqa: B018
    assert containers_of(engine, run_id) == []


async def test_no_container_is_left_after_cancellation_during_a_command(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    with trio.move_on_after(1.0) as scope:
        async with docker_sandbox(run_id, workspace) as sandbox:
            await sandbox.run_shell("sleep 60", cwd=workspace, timeout=120)
    assert scope.cancelled_caught
    assert containers_of(engine, run_id) == []


async def test_no_container_is_left_after_cancellation_while_it_is_created(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    with trio.move_on_after(0.01) as scope:
        async with docker_sandbox(run_id, workspace):
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert containers_of(engine, run_id) == []
