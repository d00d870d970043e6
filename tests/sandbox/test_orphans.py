"""No orphans: a SIGKILLed owner runs no code, so its containers are removed at the next
start-up (``open_docker_engine``) or by ``conclave sandbox cleanup``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest
import trio

from conclave.actors.sandbox import open_docker_engine
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


def sigkilled_owner(run_id: str, workspace: Path) -> None:
    """A conclave process that opens a docker sandbox and is SIGKILLed while it holds it."""
    child = subprocess.Popen(
        [sys.executable, "-c", _OWNER, run_id, str(workspace)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    try:
        assert child.stdout.readline() == b"ready\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()


def gone_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def labelled(
    client: docker.DockerClient, run_id: str, owner: int, started: str | None = None
) -> str:
    """A container labelled as ``owner``'s, for run ``run_id``; its id."""
    labels = {LABEL_RUN: run_id, LABEL_OWNER_PID: str(owner), LABEL_AGENT: "agent1"}
    if started is not None:
        labels[LABEL_OWNER_STARTED] = started
    container = client.containers.create(DEFAULT_IMAGE, command=["true"], labels=labels)
    return str(container.id)


def test_a_sigkilled_owner_leaves_its_container_and_cleanup_removes_it(
    engine: docker.DockerClient,
    run_id: str,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sigkilled_owner(run_id, workspace)
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
