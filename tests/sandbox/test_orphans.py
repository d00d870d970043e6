"""No orphans: a SIGKILLed owner runs no code, so its containers end by themselves (their
lifeline, the owner's attached socket, closes with it; the run's deadline bounds them too),
and what is left (a container that could not end itself) is removed at the next start-up
(``open_docker_engine``, said in a line as the run starts) or by ``conclave sandbox
cleanup``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest
import trio

from conclave.actors.sandbox import docker as docker_sandbox_module
from conclave.actors.sandbox import open_docker_engine, open_sandbox
from conclave.actors.sandbox.engine import (
    LABEL_AGENT,
    LABEL_OWNER_PID,
    LABEL_OWNER_STARTED,
    LABEL_RUN,
    process_started,
    remove_orphans,
)
from conclave.actors.sandbox.image import DEFAULT_IMAGE
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind
from conclave.ui.cli import main
from tests.sandbox.conftest import containers_of

# Every spec that opens the Docker engine runs on the same xdist worker, one at a time:
# opening it removes every orphaned container, including those the orphan specs make to
# see them removed.
pytestmark = pytest.mark.xdist_group("docker")

_OWNER = """
import sys, trio
from pathlib import Path
from conclave.actors.sandbox import open_sandbox
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind

async def owner() -> None:
    config = SandboxConfig(type=SandboxKind.DOCKER)
    async with open_sandbox(
        config, run_id=sys.argv[1], agent="agent1", workspace=Path(sys.argv[2]), mounts=()
    ):
        print("ready", flush=True)
        await trio.sleep_forever()

trio.run(owner)
"""


def sigkilled_owner(run_id: str, workspace: Path) -> str:
    """A conclave process that opens a docker sandbox and is SIGKILLed while it holds it;
    the name of its container, seen while the owner lived."""
    child = subprocess.Popen(
        [sys.executable, "-c", _OWNER, run_id, str(workspace)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    try:
        assert child.stdout.readline() == b"ready\n"
        client = docker.from_env()
        try:
            [name] = containers_of(client, run_id)
        finally:
            client.close()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    return name


def until(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether ``condition`` holds within ``seconds`` (polled: the engine decides)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def gone_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def labelled(
    client: docker.DockerClient, run_id: str, owner: int, started: str | None = None
) -> str:
    """A container as an older Conclave, or a crashed engine, would leave (no lifeline),
    labelled as ``owner``'s for run ``run_id``; its id."""
    labels = {LABEL_RUN: run_id, LABEL_OWNER_PID: str(owner), LABEL_AGENT: "agent1"}
    if started is not None:
        labels[LABEL_OWNER_STARTED] = started
    container = client.containers.create(DEFAULT_IMAGE, command=["true"], labels=labels)
    return str(container.id)


def test_a_sigkilled_owners_container_ends_by_itself(
    engine: docker.DockerClient, run_id: str, workspace: Path
) -> None:
    sigkilled_owner(run_id, workspace)
    assert until(lambda: containers_of(engine, run_id) == [], 15)


async def test_a_container_ends_by_itself_once_the_runs_deadline_has_passed(
    engine: docker.DockerClient,
    run_id: str,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(docker_sandbox_module, "LIFETIME_GRACE_S", 1.0)
    config = SandboxConfig(type=SandboxKind.DOCKER)
    deadline = time.time()  # the run's deadline is now: the container lives 1 s past it
    async with open_sandbox(
        config, run_id=run_id, agent="agent1", workspace=workspace, mounts=(), deadline=deadline
    ):
        assert len(await trio.to_thread.run_sync(containers_of, engine, run_id)) == 1
        await trio.sleep(4)
        assert await trio.to_thread.run_sync(containers_of, engine, run_id) == []


def test_cleanup_removes_a_container_whose_owner_is_gone(
    engine: docker.DockerClient, run_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled(engine, run_id, gone_pid())
    [name] = containers_of(engine, run_id)
    assert main(["sandbox", "cleanup"]) == 0
    assert f"removed {name} (run {run_id}, agent agent1" in capsys.readouterr().out
    assert containers_of(engine, run_id) == []


def test_cleanup_leaves_the_containers_of_live_owners(
    engine: docker.DockerClient, run_id: str
) -> None:
    labelled(engine, run_id, os.getpid(), started=process_started(os.getpid()))
    try:
        remove_orphans(engine)
        assert len(containers_of(engine, run_id)) == 1
    finally:
        for container in engine.containers.list(
            all=True, filters={"label": LABEL_RUN + "=" + run_id}
        ):
            container.remove(force=True)


def test_cleanup_passes_over_a_container_removed_while_it_lists_them(
    engine: docker.DockerClient, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine lists ids, then each is inspected: this one's owner removes it in between,
    # as another run on the same engine can at any time.
    doomed = labelled(engine, run_id, os.getpid(), started=process_started(os.getpid()))
    inspect = engine.api.inspect_container

    def removed_first(container: str) -> dict[str, object]:
        if container == doomed:
            engine.api.remove_container(container, force=True)
        found: dict[str, object] = inspect(container)
        return found

    monkeypatch.setattr(engine.api, "inspect_container", removed_first)

    removed = remove_orphans(engine)

    assert run_id not in [o.run_id for o in removed]
    assert containers_of(engine, run_id) == []


def test_cleanup_removes_a_container_whose_owner_pid_now_names_another_process(
    engine: docker.DockerClient, run_id: str
) -> None:
    started = process_started(os.getpid())
    assert started is not None
    labelled(engine, run_id, os.getpid(), started=str(int(started) - 1))
    removed = remove_orphans(engine)
    assert [o.run_id for o in removed if o.run_id == run_id] == [run_id]
    assert containers_of(engine, run_id) == []


def test_cleanup_removes_a_container_whose_owner_label_is_not_a_pid(
    engine: docker.DockerClient, run_id: str
) -> None:
    engine.containers.create(DEFAULT_IMAGE, command=["true"], labels={LABEL_RUN: run_id})
    removed = remove_orphans(engine)
    assert [o.owner_pid for o in removed if o.run_id == run_id] == [None]
    assert containers_of(engine, run_id) == []


async def test_opening_the_engine_removes_orphans_at_start_up(
    engine: docker.DockerClient, run_id: str
) -> None:
    await trio.to_thread.run_sync(labelled, engine, run_id, gone_pid())
    async with open_docker_engine(SandboxConfig(type=SandboxKind.DOCKER)) as opened:
        assert [o.run_id for o in opened.orphans_removed if o.run_id == run_id] == [run_id]
    assert await trio.to_thread.run_sync(containers_of, engine, run_id) == []


_RUN_CONFIG = """
agents:
  - id: worker
    backend:
      type: scripted
      tool_steps:
        - tool: run_shell
          arguments: {command: "echo started > started.txt; sleep 120", timeout: 150}
orchestrator:
  tools: true
  sandbox: {type: docker}
"""


def conclave_run(tmp_path: Path) -> subprocess.Popen[str]:
    """``conclave run`` in a process of its own, its agent running one long shell command
    in a docker sandbox; its progress on stderr."""
    config = tmp_path / "config.yaml"
    config.write_text(_RUN_CONFIG)
    return subprocess.Popen(
        [sys.executable, "-m", "conclave", "run", "Do the work", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )


def owned_by(client: docker.DockerClient, pid: int) -> list[str]:
    found = client.containers.list(
        all=True, filters={"label": f"{LABEL_OWNER_PID}={pid}"}, ignore_removed=True
    )
    return [c.name or "" for c in found]


def test_a_sigkilled_conclave_run_leaves_no_container(
    engine: docker.DockerClient, tmp_path: Path
) -> None:
    child = conclave_run(tmp_path)
    try:
        assert until(lambda: any(tmp_path.glob("**/workspaces/worker/started.txt")), 60)
        assert len(owned_by(engine, child.pid)) == 1
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    assert until(lambda: owned_by(engine, child.pid) == [], 15)


def test_a_run_says_at_start_how_many_orphans_it_removed(
    engine: docker.DockerClient, run_id: str, tmp_path: Path
) -> None:
    labelled(engine, run_id, gone_pid())
    labelled(engine, run_id, gone_pid())
    child = conclave_run(tmp_path)
    try:
        assert until(lambda: any(tmp_path.glob("**/workspaces/worker/started.txt")), 60)
    finally:
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    line = re.search(r"sandbox docker \(confined, no network\): removed (\d+) orphan", stderr)
    assert line is not None, stderr
    assert int(line.group(1)) >= 2  # ours, and any other test's left meanwhile
    assert containers_of(engine, run_id) == []
