"""``conclave sandbox build-image``: a busybox image built locally, never pulled; and the
clear error, with its exit code, when no engine is reachable."""

from __future__ import annotations

import secrets
from pathlib import Path

import docker
import pytest

from conclave.actors.sandbox import SandboxUnavailable, open_docker_engine, open_sandbox
from conclave.actors.sandbox.engine import connect
from conclave.actors.sandbox.image import build_image
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

# Every spec that opens the Docker engine runs on the same xdist worker, one at a time:
# opening it removes every orphaned container, including those the orphan specs make to
# see them removed.
pytestmark = pytest.mark.xdist_group("docker")

NO_ENGINE = "unix:///nonexistent/docker.sock"


def test_build_image_makes_a_busybox_image_whose_shell_runs(
    engine: docker.DockerClient, capsys: pytest.CaptureFixture[str]
) -> None:
    tag = f"conclave-sandbox:test-{secrets.token_hex(4)}"
    try:
        assert main(["sandbox", "build-image", "--tag", tag]) == ExitCode.OK
        assert capsys.readouterr().out.startswith(f"built {tag} (")
        output = engine.containers.run(
            tag, ["sh", "-c", "echo ok; ls /usr/bin/env /bin/timeout /bin/setsid"], remove=True
        )
        assert output.splitlines()[0] == b"ok"
    finally:
        engine.images.remove(tag, force=True)


def test_build_image_is_refused_saying_what_to_do_when_busybox_is_not_static(
    engine: docker.DockerClient, tmp_path: Path
) -> None:
    dynamic = Path("/bin/sh").resolve()
    with pytest.raises(SandboxUnavailable, match="busybox-static"):
        build_image(engine, tag="conclave-sandbox:never", busybox=dynamic)


def test_build_image_without_busybox_exits_1_saying_how_to_install_it(
    engine: docker.DockerClient,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["sandbox", "build-image", "--tag", "conclave-sandbox:never"]) == ExitCode.FAILED
    assert "busybox is not installed; install a static busybox" in capsys.readouterr().err


def test_no_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    with pytest.raises(SandboxUnavailable, match=r"no Docker engine is reachable.*start the"):
        connect()


@pytest.mark.parametrize("action", [["build-image"], ["cleanup"]])
def test_the_sandbox_commands_exit_1_naming_the_problem_without_an_engine(
    action: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    assert main(["sandbox", *action]) == ExitCode.FAILED
    assert "no Docker engine is reachable" in capsys.readouterr().err


async def test_a_docker_sandbox_without_an_engine_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    with pytest.raises(SandboxUnavailable, match="no Docker engine is reachable"):
        async with open_sandbox(
            SandboxConfig(type=SandboxKind.DOCKER),
            run_id="r",
            agent="a",
            workspace=workspace,
            mounts=(),
        ):
            pass


async def test_a_missing_image_says_to_build_it(engine: docker.DockerClient) -> None:
    config = SandboxConfig(type=SandboxKind.DOCKER, image="conclave-sandbox:never-built")
    with pytest.raises(SandboxUnavailable, match="conclave sandbox build-image"):
        async with open_docker_engine(config):
            pass
