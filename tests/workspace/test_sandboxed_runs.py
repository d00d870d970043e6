"""Context paths through real sandboxes in whole runs: a shell command cannot write a
writable context path during coordination (it is mounted read-only), and can in the final
presentation (remounted rw: bubblewrap's mounts, or docker's container recreated). Like
tests/sandbox, these need bubblewrap and a Docker engine with the sandbox image: without
them they skip saying why, and under ``CI=true`` (which installs both) they fail."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import attrs
import pytest

from conclave.actors.events.loop import ToolCallFinished
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.sandbox.local import bubblewrap
from conclave.actors.sandbox.protocol import SandboxUnavailable
from conclave.actors.workspace.writes import Writes
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.backends import ToolStep
from conclave.config.schema.context import ContextPath, ContextPermission
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind
from conclave.runtime import MemoryTap
from tests.coordination.helpers import TASK

# Every spec that opens the Docker engine runs on the same xdist worker, one at a time:
# opening it removes every orphaned container, including those the orphan specs make to
# see them removed.
pytestmark = pytest.mark.xdist_group("docker")


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run installs it)")
    pytest.skip(reason)


def _engine_ready() -> None:
    from conclave.actors.sandbox.engine import connect
    from conclave.actors.sandbox.image import DEFAULT_IMAGE, image_present

    try:
        client = connect()
    except SandboxUnavailable as exc:
        _missing(f"no Docker engine: {exc}")
        return
    try:
        if not image_present(client, DEFAULT_IMAGE):
            _missing(f"the image {DEFAULT_IMAGE} is not built (conclave sandbox build-image)")
    finally:
        client.close()


def _config(ctx: Path, sandbox: SandboxConfig) -> ConclaveConfig:
    early = ToolStep(tool="run_shell", arguments={"command": f"echo early > {ctx}/early.txt"})
    late = ToolStep(tool="run_shell", arguments={"command": f"echo late > {ctx}/late.txt"})
    backend = ScriptedBackendConfig(tool_steps=(early,), presentation_tool_steps=(late,))
    agents = tuple(AgentConfig(id=f"a{i}", backend=attrs.evolve(backend, seed=i)) for i in (1, 2))
    context = ContextPath(path=ctx, permission=ContextPermission.WRITE)
    orchestrator = OrchestratorConfig(quiet_period=None, context_paths=(context,), sandbox=sandbox)
    return ConclaveConfig(agents=agents, orchestrator=orchestrator)


async def _run_in(tmp_path: Path, sandbox: SandboxConfig) -> tuple[MemoryTap, Path, Any]:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    tap = MemoryTap()
    # The log dir's name is the run id that labels the run's containers: unique, as other
    # specs (and other test sessions) may have containers of their own meanwhile.
    log_dir = tmp_path / f"run-under-test-{secrets.token_hex(4)}"
    spec = RunSpec(task=TASK, config=_config(ctx, sandbox), log_dir=log_dir)
    result = await run(spec, taps=[tap])
    return tap, ctx, result


def _shells(tap: MemoryTap) -> list[ToolCallFinished]:
    return [e for e in tap.of_type(ToolCallFinished) if e.tool == "run_shell"]


async def test_bubblewrap_keeps_context_paths_read_only_until_the_presentation(
    tmp_path: Path,
) -> None:
    if bubblewrap() is None:
        _missing("bubblewrap is not installed or does not work here (apt-get install bubblewrap)")

    tap, ctx, result = await _run_in(tmp_path, SandboxConfig(type=SandboxKind.LOCAL))

    assert not (ctx / "early.txt").exists()
    assert any("Read-only file system" in e.output + (e.error or "") for e in _shells(tap))
    assert (ctx / "late.txt").read_text() == "late\n"
    assert result.writes == Writes.of(new=[str(ctx / "late.txt")])


async def test_docker_recreates_the_presenters_container_with_context_paths_writable(
    tmp_path: Path,
) -> None:
    _engine_ready()

    tap, ctx, result = await _run_in(tmp_path, SandboxConfig(type=SandboxKind.DOCKER))

    assert not (ctx / "early.txt").exists()
    assert any("Read-only file system" in e.output + (e.error or "") for e in _shells(tap))
    assert (ctx / "late.txt").read_text() == "late\n"
    assert result.writes == Writes.of(new=[str(ctx / "late.txt")])
    assert result.log_dir is not None
    assert _containers_of(Path(result.log_dir).name) == []


def _containers_of(run_id: str) -> list[str]:
    from conclave.actors.sandbox.engine import LABEL_RUN, connect

    client = connect()
    try:
        found = client.containers.list(
            all=True, filters={"label": f"{LABEL_RUN}={run_id}"}, ignore_removed=True
        )
        return [str(c.name) for c in found]
    finally:
        client.close()


@pytest.mark.parametrize("kind", [SandboxKind.LOCAL, SandboxKind.DOCKER], ids=lambda k: k.value)
async def test_protected_paths_stay_read_only_to_the_presentations_shell(
    tmp_path: Path, kind: SandboxKind
) -> None:
    if kind is SandboxKind.DOCKER:
        _engine_ready()
    elif bubblewrap() is None:
        _missing("bubblewrap is not installed or does not work here (apt-get install bubblewrap)")
    ctx = tmp_path / "ctx"
    (ctx / "keep").mkdir(parents=True)
    touch = ToolStep(tool="run_shell", arguments={"command": f"echo x > {ctx}/keep/f.txt"})
    backend = ScriptedBackendConfig(presentation_tool_steps=(touch,))
    context = ContextPath(path=ctx, permission=ContextPermission.WRITE, protected_paths=["keep"])
    config = ConclaveConfig(
        agents=(AgentConfig(id="a1", backend=backend),),
        orchestrator=OrchestratorConfig(
            quiet_period=None, context_paths=(context,), sandbox=SandboxConfig(type=kind)
        ),
    )
    tap = MemoryTap()

    result = await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work"), taps=[tap])

    assert not (ctx / "keep" / "f.txt").exists()
    assert any("Read-only file system" in e.output + (e.error or "") for e in _shells(tap))
    assert result.writes.count == 0


@pytest.mark.parametrize("kind", [SandboxKind.LOCAL, SandboxKind.DOCKER], ids=lambda k: k.value)
async def test_an_agents_shell_reads_its_peers_snapshots_and_cannot_write_them(
    tmp_path: Path, kind: SandboxKind
) -> None:
    if kind is SandboxKind.DOCKER:
        _engine_ready()
    elif bubblewrap() is None:
        _missing("bubblewrap is not installed or does not work here (apt-get install bubblewrap)")
    work = (tmp_path / "run-under-test").resolve()  # the log dir, so the workdir too
    notes = ToolStep(tool="write_file", arguments={"path": "notes.txt", "content": "by {agent}"})
    snapshots = work / "snapshots"
    peek = ToolStep(
        tool="run_shell",
        arguments={
            "command": f"cat {snapshots}/agent1.1/notes.txt {snapshots}/agent2.1/notes.txt; "
            f"echo forged > {snapshots}/agent1.1/notes.txt; cat {work}/events.jsonl"
        },
    )
    backend = ScriptedBackendConfig(tool_steps=(notes,), vote_tool_steps=(peek,))
    agents = tuple(AgentConfig(id=f"a{i}", backend=attrs.evolve(backend, seed=i)) for i in (1, 2))
    orchestrator = OrchestratorConfig(
        quiet_period=None,
        tools=True,
        defer_voting_until_all_answered=True,
        sandbox=SandboxConfig(type=kind),
    )
    tap = MemoryTap()

    await run(
        RunSpec(
            task=TASK,
            config=ConclaveConfig(agents=agents, orchestrator=orchestrator),
            log_dir=work,
        ),
        taps=[tap],
    )

    peeks = _shells(tap)
    assert len(peeks) == 2
    for peeked in peeks:
        assert "by a1" in peeked.output and "by a2" in peeked.output
        assert "Read-only file system" in peeked.output
        assert "events.jsonl" in peeked.output  # cat's complaint: no such file
        assert "run_started" not in peeked.output
    written = {p.read_text() for p in snapshots.glob("agent*.1/notes.txt")}
    assert written == {"by a1", "by a2"}
