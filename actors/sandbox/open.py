"""``open_sandbox``: the one way to get a sandbox, which owns its lifetime."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import docker
import trio

from conclave.actors.sandbox.docker import DockerSandbox
from conclave.actors.sandbox.engine import OrphanRemoved, connect, remove_orphans
from conclave.actors.sandbox.image import image_present
from conclave.actors.sandbox.local import LocalSandbox, bubblewrap
from conclave.actors.sandbox.protocol import (
    NO_RUN_DIRS,
    Mount,
    RunDirs,
    Sandbox,
    SandboxKind,
    SandboxUnavailable,
)
from conclave.config.run_secrets import NO_SECRETS, RunSecrets
from conclave.config.schema.sandbox import SandboxConfig

__all__ = ["DockerEngine", "open_docker_engine", "open_sandbox"]


@attrs.frozen(kw_only=True)
class DockerEngine:
    """A connection to the engine, checked: reachable, the image present, orphans swept."""

    client: docker.DockerClient
    orphans_removed: tuple[OrphanRemoved, ...]


@contextlib.asynccontextmanager
async def open_docker_engine(config: SandboxConfig) -> AsyncIterator[DockerEngine]:
    """Connect to the engine, check that ``config.image`` is there, and remove the
    containers of owners that are gone (a SIGKILLed run leaves them: no code of its ran).
    A run opens one and passes it to each ``open_sandbox``.

    Raises :class:`SandboxUnavailable` naming what to do when the engine is unreachable or
    the image was never built.
    """
    client = await trio.to_thread.run_sync(connect)
    try:
        if not await trio.to_thread.run_sync(image_present, client, config.image):
            raise SandboxUnavailable(
                f"the sandbox image {config.image!r} is not in the local Docker engine; "
                "build it with `conclave sandbox build-image` (it is built locally, never pulled)"
            )
        removed = await trio.to_thread.run_sync(remove_orphans, client)
        yield DockerEngine(client=client, orphans_removed=tuple(removed))
    finally:
        client.close()


@contextlib.asynccontextmanager
async def open_sandbox(
    config: SandboxConfig,
    *,
    run_id: str,
    agent: str,
    workspace: Path,
    mounts: tuple[Mount, ...],
    run_dirs: RunDirs = NO_RUN_DIRS,
    engine: DockerEngine | None = None,
    secrets: RunSecrets = NO_SECRETS,
    deadline: float | None = None,
) -> AsyncIterator[Sandbox]:
    """The sandbox ``config.type`` names, for one agent, closed on exit however the block
    ends (normally, by an exception, or cancelled: the docker container is removed,
    shielded and bounded). ``mounts`` are the paths besides ``workspace`` the commands may
    see, read-only unless writable; ``run_dirs`` the run's own directories, shared read-only
    or hidden (they stay across remounts); ``secrets`` are kept out of the commands'
    environment. Without ``engine`` a docker sandbox opens its own. ``deadline`` (wall
    clock, ``time.time()``) is when the run's own deadline passes: a docker container ends
    by itself some time after it (and as soon as this process is gone)."""
    if config.type is SandboxKind.LOCAL:
        await trio.to_thread.run_sync(bubblewrap)  # probed once per process, off the loop
        local = LocalSandbox(
            workspace=workspace,
            mounts=mounts,
            config=config,
            run_dirs=run_dirs,
            secrets=secrets,
        )
        try:
            yield local
        finally:
            await local.aclose()
        return
    async with contextlib.AsyncExitStack() as stack:
        if engine is None:
            engine = await stack.enter_async_context(open_docker_engine(config))
        sandbox = DockerSandbox(
            client=engine.client,
            config=config,
            run_id=run_id,
            agent=agent,
            workspace=workspace,
            mounts=mounts,
            run_dirs=run_dirs,
            deadline=deadline,
            secrets=secrets,
        )
        await sandbox.start()
        try:
            yield sandbox
        finally:
            await sandbox.aclose()
