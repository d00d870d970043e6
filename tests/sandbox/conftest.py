"""The sandbox tests use the real tools: bubblewrap and a Docker engine with the image.

Without them the tests that need them skip, saying why (``pytest -rs``); with ``CI=true``
(set by .ci/run, which installs them) a missing tool fails those tests instead, so CI
cannot pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from conclave.actors.sandbox.engine import LABEL_RUN, connect
from conclave.actors.sandbox.image import DEFAULT_IMAGE, build_image, image_present
from conclave.actors.sandbox.local import bubblewrap
from conclave.actors.sandbox.protocol import SandboxUnavailable


def missing(reason: str) -> None:
    """Skip the test saying why, or fail it under CI."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run installs it)")
    pytest.skip(reason)


@pytest.fixture
def bwrap() -> str:
    found = bubblewrap()
    if found is None:
        missing("bubblewrap is not installed or does not work here (apt-get install bubblewrap)")
    assert found is not None
    return found


@pytest.fixture(scope="session")
def _engine() -> Iterator[docker.DockerClient | str]:
    """The engine, with the sandbox image built if it was missing; or why there is none."""
    try:
        client = connect()
    except SandboxUnavailable as exc:
        yield str(exc)
        return
    try:
        if not image_present(client, DEFAULT_IMAGE):
            build_image(client, tag=DEFAULT_IMAGE)
        yield client
    finally:
        client.close()


@pytest.fixture
def engine(_engine: docker.DockerClient | str) -> docker.DockerClient:
    if isinstance(_engine, str):
        missing(f"no Docker engine: {_engine}")
    assert not isinstance(_engine, str)
    return _engine


def containers_of(client: docker.DockerClient, run_id: str) -> list[str]:
    """Names of the containers, running or not, labelled with ``run_id``."""
    found = client.containers.list(
        all=True, filters={"label": f"{LABEL_RUN}={run_id}"}, ignore_removed=True
    )
    return [c.name or "" for c in found]


@pytest.fixture
def run_id(request: pytest.FixtureRequest) -> str:
    """A run id unique to the test, so container listings see only its own."""
    return f"test-{os.getpid()}-{request.node.name[:40]}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()
