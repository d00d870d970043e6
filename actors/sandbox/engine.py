"""The Docker engine as the sandboxes see it: one connection, the labels that mark Conclave's
containers, and the removal of containers whose owner process is gone.

Every call here blocks (the docker SDK is synchronous): async callers run them through
``trio.to_thread.run_sync``. A thread cannot be cancelled, so each call is a bounded request
(the client has a timeout) and each command is bounded inside the container.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs
import docker
import docker.errors
from docker.models.containers import Container

from conclave.actors.sandbox.protocol import SandboxUnavailable

__all__ = [
    "LABEL_AGENT",
    "LABEL_OWNER_PID",
    "LABEL_OWNER_STARTED",
    "LABEL_RUN",
    "OrphanRemoved",
    "connect",
    "labelled_containers",
    "owner_alive",
    "owner_labels",
    "pid_alive",
    "process_started",
    "remove_orphans",
]

LABEL_RUN = "conclave.run"
LABEL_OWNER_PID = "conclave.owner_pid"
LABEL_OWNER_STARTED = "conclave.owner_started"
"""When the owner process started (clock ticks since boot): with the pid it names one
process, where a pid alone names whichever process reuses it after the owner's death."""
LABEL_AGENT = "conclave.agent"

_API_TIMEOUT_S = 60
"""Seconds one engine request may take (an image import of a few MB takes well under one)."""

ENGINE_HELP = (
    "start the Docker engine (`sudo systemctl start docker`, or `dockerd &`), make sure "
    "DOCKER_HOST (if set) points at it and that you may use its socket, or set "
    "orchestrator.sandbox.type: local"
)


def connect() -> docker.DockerClient:
    """A client of the engine named by the environment (``DOCKER_HOST`` or the default
    socket), checked with a ping; raises :class:`SandboxUnavailable` saying what to do."""
    try:
        client = docker.from_env(timeout=_API_TIMEOUT_S)
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"no Docker engine is reachable ({exc}); {ENGINE_HELP}") from exc
    try:
        client.ping()
    except docker.errors.DockerException as exc:
        client.close()
        raise SandboxUnavailable(f"no Docker engine is reachable ({exc}); {ENGINE_HELP}") from exc
    return client


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_started(pid: int) -> str | None:
    """When process ``pid`` started, from ``/proc/PID/stat`` (field 22); ``None`` without
    /proc or without that process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_labels() -> dict[str, str]:
    """The labels that name this process as a container's owner."""
    pid = os.getpid()
    started = process_started(pid)
    labels = {LABEL_OWNER_PID: str(pid)}
    if started is not None:
        labels[LABEL_OWNER_STARTED] = started
    return labels


def owner_alive(pid: int, started: str | None) -> bool:
    """Whether the owner process still runs: its pid exists and, when its start time is
    known, the process with that pid started then (else the pid was reused)."""
    if not pid_alive(pid):
        return False
    if started is None:
        return True
    now = process_started(pid)
    return now is None or now == started


def labelled_containers(
    client: docker.DockerClient, *, run_id: str | None = None
) -> list[Container]:
    """Every container (running or not) that Conclave created, or only one run's. One
    removed while it is listed (by its owner, or another cleanup) is passed over: the
    engine lists ids first and then inspects each."""
    label = LABEL_RUN if run_id is None else f"{LABEL_RUN}={run_id}"
    found = client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    return list(found)


@attrs.frozen(kw_only=True)
class OrphanRemoved:
    name: str
    run_id: str
    agent: str
    owner_pid: int | None


def remove_orphans(
    client: docker.DockerClient, *, alive: Callable[[int, str | None], bool] = owner_alive
) -> list[OrphanRemoved]:
    """Remove Conclave's containers whose owner process is gone: after a SIGKILL no code of
    the owner ran, so this is the only way they go. A container whose owner label is not a
    pid is an orphan too (nobody can own it). Containers of live owners are left alone.

    The owner pid is this host's: containers of an engine shared between hosts would need
    the host in the label too; Conclave's engine is the local one.
    """
    removed: list[OrphanRemoved] = []
    for container in labelled_containers(client):
        labels = container.labels
        raw = labels.get(LABEL_OWNER_PID, "")
        owner = int(raw) if raw.isdigit() else None
        if owner is not None and alive(owner, labels.get(LABEL_OWNER_STARTED)):
            continue
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            continue  # removed meanwhile, by its owner or another cleanup
        except docker.errors.APIError as exc:
            if exc.status_code == 409:  # another cleanup is removing it right now
                continue
            raise
        removed.append(
            OrphanRemoved(
                name=container.name or container.id or "?",
                run_id=labels.get(LABEL_RUN, ""),
                agent=labels.get(LABEL_AGENT, ""),
                owner_pid=owner,
            )
        )
    return removed
