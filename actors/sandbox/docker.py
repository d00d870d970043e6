"""The ``docker`` sandbox: one long-lived container per agent, holding one shell session.

The container has no network (unless ``sandbox.network``), memory, pid and CPU-time limits,
no capabilities, no new privileges, a read-only root with a private /tmp, only the
environment variables ``sandbox.env.allow`` names, and runs as the user's uid:gid; the
workspace is mounted
read-write and every other mount at the same path as on the host, read-only unless it is
writable. The run's answer snapshots are mounted read-only at their host path too (the
directory, so a snapshot published later appears in it); a hidden directory of the run (the
event log's, the live workspaces, the staged copies) is covered by an empty read-only tmpfs
where a mount would expose it. A mount's mode cannot change once the container exists, so
``remount`` replaces the container.

A container ends by itself when its owner is gone or the run's deadline has passed (see
:data:`LIFETIME_GRACE_S`), so a SIGKILLed run leaves no container running: its main process
reads its stdin, which the owner holds open through an attached socket (``StdinOnce``: the
engine closes the container's stdin when that socket closes, as it does when the owner dies),
bounded by ``timeout``; when it ends the container stops and the engine removes it
(``AutoRemove``). The next start's orphan sweep removes what could not end itself (a
container whose engine restarted, say).

Every docker SDK call runs in a thread (``trio.to_thread.run_sync``); a thread cannot be
cancelled, so cancellation waits for the call (each is a bounded request) and commands are
bounded inside the container by ``timeout -s KILL``. The session's socket is read with trio,
so a command in flight is cancellable: its process group is killed and the session dropped.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import time
from pathlib import Path
from typing import Any

import docker
import docker.errors
import trio
from docker.models.containers import Container
from docker.types import Mount as DockerMount
from docker.types import Ulimit

from conclave.actors.sandbox.engine import LABEL_AGENT, LABEL_RUN, owner_labels
from conclave.actors.sandbox.env_policy import container_environment
from conclave.actors.sandbox.environment import without_secrets
from conclave.actors.sandbox.output import CappedOutput
from conclave.actors.sandbox.protocol import (
    NO_RUN_DIRS,
    Mount,
    RunDirs,
    SandboxUnavailable,
    ShellOutcome,
)
from conclave.actors.sandbox.session import SESSION_SHELL, SessionEnded, ShellSession
from conclave.config.run_secrets import NO_SECRETS, RunSecrets
from conclave.config.schema.sandbox import SandboxConfig

__all__ = ["LIFETIME_GRACE_S", "DockerSandbox", "lifetime_command"]

_DRAIN_S = 2.0
"""Seconds to wait for a killed command's end marker before the session is dropped."""
_TEARDOWN_S = 30.0
"""Seconds a container's removal may take, however the sandbox ends (shielded)."""
_NAME_PART = re.compile(r"[^a-zA-Z0-9_.-]+")
LIFETIME_GRACE_S = 600.0
"""Seconds a container lives past the run's deadline: the run's wrap-up (a presentation with
tools, the final copy) still uses it. A container made later (a person paused the run's
clock) gets this long."""


def lifetime_command(deadline: float | None) -> list[str]:
    """The container's main process: it reads stdin until the owner's socket closes, and no
    longer than until ``deadline`` (wall clock) plus :data:`LIFETIME_GRACE_S`."""
    if deadline is None:
        return ["sh", "-c", "exec cat >/dev/null"]
    seconds = max(deadline - time.time(), 0.0) + LIFETIME_GRACE_S
    return ["sh", "-c", 'exec timeout -s KILL "$0" cat >/dev/null', str(int(seconds) + 1)]


def _name_part(text: str) -> str:
    return _NAME_PART.sub("-", text).strip("-.")[:40] or "x"


class DockerSandbox:
    """Use :func:`actors.sandbox.open_sandbox`; ``start`` and ``aclose`` bracket its life."""

    def __init__(
        self,
        *,
        client: docker.DockerClient,
        config: SandboxConfig,
        run_id: str,
        agent: str,
        workspace: Path,
        mounts: tuple[Mount, ...],
        run_dirs: RunDirs = NO_RUN_DIRS,
        deadline: float | None = None,
        secrets: RunSecrets = NO_SECRETS,
    ) -> None:
        self._client = client
        self._secrets = secrets
        self._config = config
        self._run_id = run_id
        self._agent = agent
        self._workspace = workspace
        self._mounts = mounts
        self._run_dirs = run_dirs
        self._deadline = deadline
        self._container: Container | None = None
        self._lifeline: Any = None
        """The container's stdin, attached (the SDK's wrapper of the socket): while it is
        open the container lives."""
        self._session: ShellSession | None = None
        self._lock = trio.Lock()
        self._closed = False

    @property
    def container(self) -> Container | None:
        """The current container (a new one after each ``remount``)."""
        return self._container

    def refusal(self) -> str | None:
        return None

    async def start(self) -> None:
        """Create the container and open its session. On failure or cancellation whatever
        was created is removed before this returns or raises."""
        async with self._lock:
            try:
                await self._replace_container()
            except BaseException:
                await self._teardown()
                raise

    async def remount(self, mounts: tuple[Mount, ...]) -> None:
        """Replace the container with one whose mounts are ``mounts`` (the workspace stays);
        waits for a command in flight to end first."""
        async with self._lock:
            self._mounts = mounts
            await self._replace_container()

    async def aclose(self) -> None:
        """Remove the container: shielded and bounded, so it happens however the run ends."""
        self._closed = True
        await self._teardown()

    async def run_shell(self, command: str, *, cwd: Path, timeout: float) -> ShellOutcome:
        """Run ``command`` in the session shell. At ``timeout`` its process group is killed
        (exit code ``None``, ``timed_out``); on cancellation too, before ``Cancelled``
        propagates. The session goes on when it can be read to the command's end, else the
        next call opens a new one (and a new container, if this one stopped)."""
        async with self._lock:
            self._check_open()
            session = await self._ensure_session()
            output = CappedOutput(self._config.max_output_bytes)
            started = trio.current_time()
            exit_code: int | None = None
            finished = False
            try:
                with trio.move_on_after(timeout):
                    exit_code = await session.run(command, cwd=cwd, timeout=timeout, output=output)
                    finished = True
            except SessionEnded as exc:
                # Nothing left to kill: the container stopped. The next call gets a new one.
                self._drop(session)
                output.add(f"\n[{exc}]".encode())
                return ShellOutcome(
                    exit_code=None,
                    output=output.text(),
                    timed_out=False,
                    duration=trio.current_time() - started,
                    truncated_bytes=output.truncated,
                )
            finally:
                if not finished and self._session is session:
                    await self._interrupt(session)
            return ShellOutcome(
                exit_code=exit_code,
                output=output.text(),
                timed_out=not finished,
                duration=trio.current_time() - started,
                truncated_bytes=output.truncated,
            )

    async def _ensure_session(self) -> ShellSession:
        """The open session, or a new one; a new container too if the old one stopped (out
        of memory, or killed from outside)."""
        if self._session is None:
            try:
                self._session = await self._open_session()
            except docker.errors.APIError:
                await self._replace_container()
        assert self._session is not None
        return self._session

    async def _interrupt(self, session: ShellSession) -> None:
        """Kill the command's process group, then read the session to the command's end so
        it can be used again; if that fails, drop it. Shielded and bounded: it runs on
        cancellation too."""
        container = self._container
        with trio.CancelScope(shield=True), trio.move_on_after(_TEARDOWN_S):
            try:
                pgid = None
                with trio.move_on_after(_DRAIN_S):
                    pgid = await session.wait_pgid()
                if pgid is not None and container is not None:
                    kill = ["kill", "-KILL", f"-{pgid}"]
                    await trio.to_thread.run_sync(
                        lambda: _quietly(container.exec_run, kill, user=self._user()),
                        abandon_on_cancel=True,  # so the bound holds; the kill goes on
                    )
                with trio.move_on_after(_DRAIN_S):
                    if await session.drain():
                        return
            except SessionEnded:
                pass  # the container stopped meanwhile: nothing left to kill
        self._drop(session)

    def _drop(self, session: ShellSession) -> None:
        if self._session is session:
            self._session = None
        session.close()

    def _environment(self) -> dict[str, str]:
        """The variables ``sandbox.env.allow`` passes in, less the run's secrets by value
        (an allowed variable may still hold an agent's key)."""
        return without_secrets(container_environment(os.environ, self._config.env), self._secrets)

    def _user(self) -> str:
        return f"{os.getuid()}:{os.getgid()}"

    async def _replace_container(self) -> None:
        await self._teardown()
        self._check_open()
        container, self._lifeline = await trio.to_thread.run_sync(self._create)
        # No checkpoint between the thread's return and this line: a cancellation waits for
        # the thread, then arrives here, and ``aclose`` still finds the container.
        self._container = container
        if self._closed:  # closed by another task while the container was being created
            await self._teardown()
            self._check_open()
        self._session = await self._open_session()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the sandbox is closed; open a new one with open_sandbox")

    def _mount_list(self) -> list[DockerMount]:
        """The container's mounts, parents before children (blocking: it checks which of the
        run's directories exist)."""
        binds = [Mount(path=self._workspace, writable=True)]
        binds += [m for m in self._mounts if m.path != self._workspace]
        binds += [Mount(path=p, writable=False) for p in self._run_dirs.shared if p.exists()]
        # A hidden directory needs covering only where a mount would show it.
        covers = [
            p
            for p in self._run_dirs.hidden
            if p.is_dir() and any(b.path in p.parents or b.path == p for b in binds)
        ]
        mounts = [
            (
                b.path,
                DockerMount(
                    target=str(b.path), source=str(b.path), type="bind", read_only=not b.writable
                ),
            )
            for b in binds
        ]
        mounts += [
            (p, DockerMount(target=str(p), source=None, type="tmpfs", read_only=True))
            for p in covers
        ]
        mounts.sort(key=lambda m: len(m[0].parts))
        return [m for _, m in mounts]

    def _create(self) -> tuple[Container, Any]:
        """A new container, started, and its lifeline (blocking)."""
        workspace = str(self._workspace)
        mounts = self._mount_list()
        name = "-".join(
            ["conclave", _name_part(self._run_id), _name_part(self._agent), secrets.token_hex(3)]
        )
        memory = f"{self._config.memory_mb}m"
        cpu = self._config.cpu_seconds
        container = self._client.containers.create(  # create, never run: run would pull
            self._config.image,
            command=lifetime_command(self._deadline),
            name=name,
            labels={LABEL_RUN: self._run_id, LABEL_AGENT: self._agent, **owner_labels()},
            init=True,  # reaps what commands leave behind, so zombies never fill the pid limit
            stdin_open=True,
            detach=False,  # with stdin_open: StdinOnce, the stdin closes with the lifeline
            auto_remove=True,
            network_mode="bridge" if self._config.network else "none",
            mem_limit=memory,
            memswap_limit=memory,
            pids_limit=self._config.pids,
            ulimits=[Ulimit(name="cpu", soft=cpu, hard=cpu)],
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            user=self._user(),
            read_only=True,
            tmpfs={"/tmp": "rw,nosuid,nodev,size=256m"},
            environment={"HOME": "/tmp", **self._environment()},
            working_dir=workspace,
            mounts=mounts,
        )
        lifeline = None
        try:
            lifeline = self._client.api.attach_socket(
                str(container.id), params={"stdin": 1, "stream": 1}
            )
            container.start()
        except BaseException:
            _cut(lifeline)
            _remove(container)
            raise
        return container, lifeline

    async def _open_session(self) -> ShellSession:
        container = self._container
        if container is None:
            raise RuntimeError("the sandbox has no container; it was closed")

        def attach() -> tuple[socket.socket, Any]:
            api = self._client.api
            exec_id = api.exec_create(container.id, SESSION_SHELL, stdin=True, user=self._user())[
                "Id"
            ]
            wrapper = api.exec_start(exec_id, socket=True)
            raw = getattr(wrapper, "_sock", None)
            if not isinstance(raw, socket.socket):
                raise SandboxUnavailable(
                    "the Docker engine's connection is not a plain socket (ssh:// or a "
                    "named pipe?); use a unix socket or tcp:// DOCKER_HOST"
                )
            raw.setblocking(False)
            return raw, wrapper

        raw, wrapper = await trio.to_thread.run_sync(attach)
        return ShellSession(trio.socket.from_stdlib_socket(raw), keepalive=wrapper)

    async def _teardown(self) -> None:
        session, container = self._session, self._container
        self._session, self._container = None, None
        if session is not None:
            session.close()
        lifeline, self._lifeline = self._lifeline, None
        if container is None:
            _cut(lifeline)
            return
        with trio.CancelScope(shield=True), trio.move_on_after(_TEARDOWN_S):
            # Abandoned past the bound (the removal goes on in its thread; if it never ends,
            # the container still ends itself once its lifeline is cut, below).
            await trio.to_thread.run_sync(lambda: _remove(container), abandon_on_cancel=True)
        _cut(lifeline)


def _cut(lifeline: Any) -> None:
    """Close a container's lifeline (its stdin ends, and so does the container): a shutdown,
    since the SDK's wrapper holds another reference that would keep a plain close from
    reaching the engine."""
    raw = getattr(lifeline, "_sock", None)
    if not isinstance(raw, socket.socket):
        return
    with contextlib.suppress(OSError):  # the engine closed it already
        raw.shutdown(socket.SHUT_RDWR)
    raw.close()


def _remove(container: Container) -> None:
    """Remove ``container`` and return once it is gone: when the engine is already removing
    it (it ended by itself, and ``AutoRemove`` took it), wait for that."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        return
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # "removal already in progress"
            raise
        with contextlib.suppress(docker.errors.NotFound):  # removed before the wait began
            container.wait(condition="removed", timeout=_TEARDOWN_S)


def _quietly(call: Any, *args: Any, **kwargs: Any) -> None:
    """A removal or kill whose target may already be gone."""
    try:
        call(*args, **kwargs)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # "removal already in progress"
            raise
