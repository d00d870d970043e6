"""The local sandbox's long-lived bubblewrap: one per agent, started at its first command,
reused by the next, killing what each command leaves behind, and gone with the sandbox."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest
import trio

from conclave.actors.events.loop import ToolCallFinished
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.sandbox import Mount, bwrap_session, open_sandbox
from conclave.actors.sandbox.local import LocalSandbox
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.backends import ToolStep
from conclave.config.schema.sandbox import SandboxConfig
from conclave.runtime import MemoryTap
from tests.coordination.helpers import TASK
from tests.sandbox.test_local import confined, duration, killed, sleeping, until


def bubblewraps(workspace: Path) -> list[int]:
    """Host processes, zombies aside, of a bubblewrap showing ``workspace`` or a path in it."""
    found = []
    root = str(workspace).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        shown = any(a == root or a.startswith(root + b"/") for a in argv)
        if argv[0].endswith(b"bwrap") and shown and state != "Z":
            found.append(int(entry.name))
    return found


def spied_nonces(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The nonces of the statements sent to session shells, in order, as they are sent."""
    nonces: list[str] = []
    real = bwrap_session.statement

    def spy(argv: Sequence[str], *, cwd: Path, nonce: str) -> bytes:
        nonces.append(nonce)
        return real(argv, cwd=cwd, nonce=nonce)

    monkeypatch.setattr(bwrap_session, "statement", spy)
    return nonces


async def test_consecutive_commands_end_with_different_markers(
    bwrap: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nonces = spied_nonces(monkeypatch)
    sandbox = confined(workspace)
    await sandbox.run_shell("true", cwd=workspace, timeout=10)
    await sandbox.run_shell("true", cwd=workspace, timeout=10)
    assert len(nonces) == 2 and nonces[0] != nonces[1]
    await sandbox.aclose()


async def test_a_command_printing_the_previous_marker_neither_ends_early_nor_fakes_its_code(
    bwrap: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nonces = spied_nonces(monkeypatch)
    sandbox = confined(workspace)
    await sandbox.run_shell("true", cwd=workspace, timeout=10)
    forged = f"{nonces[0]}:0"
    outcome = await sandbox.run_shell(
        f"echo before; echo {forged}; echo after; exit 7", cwd=workspace, timeout=10
    )
    assert (outcome.output, outcome.exit_code) == (f"before\n{forged}\nafter\n", 7)
    await sandbox.aclose()


async def test_commands_share_one_bubblewrap_started_at_the_first(
    bwrap: str, workspace: Path
) -> None:
    sandbox = confined(workspace)
    assert bubblewraps(workspace) == []
    await sandbox.run_shell("echo kept > /tmp/note", cwd=workspace, timeout=10)
    running = bubblewraps(workspace)
    second = await sandbox.run_shell("cat /tmp/note", cwd=workspace, timeout=10)
    assert running and bubblewraps(workspace) == running
    assert second.output == "kept\n"  # the same private /tmp: the same sandbox
    await sandbox.aclose()


async def test_closing_the_sandbox_leaves_no_process(bwrap: str, workspace: Path) -> None:
    seconds = duration()
    async with open_sandbox(
        SandboxConfig(), run_id="r", agent="a", workspace=workspace, mounts=()
    ) as sandbox:
        await sandbox.run_shell("true", cwd=workspace, timeout=10)
        with trio.move_on_after(0.3):
            await sandbox.run_shell(f"sleep {seconds}", cwd=workspace, timeout=60)
        await sandbox.run_shell("true", cwd=workspace, timeout=10)
        assert bubblewraps(workspace)
    assert until(lambda: not bubblewraps(workspace), 1.0)
    assert killed(seconds)


async def test_a_command_left_in_a_new_session_ends_with_the_call(
    bwrap: str, workspace: Path
) -> None:
    seconds = duration()
    sandbox = confined(workspace)
    started = f"setsid sleep {seconds} & until grep -qx sleep /proc/$!/comm; do :; done"
    outcome = await sandbox.run_shell(f"{started}; echo started", cwd=workspace, timeout=60)
    assert (outcome.output, outcome.exit_code) == ("started\n", 0)
    assert not sleeping(seconds)  # dead before the call returned, not merely signalled
    assert bubblewraps(workspace)  # while the sandbox itself stays up
    await sandbox.aclose()


async def test_nothing_left_behind_writes_after_the_call(bwrap: str, workspace: Path) -> None:
    sandbox = confined(workspace)
    outcome = await sandbox.run_shell(
        "(sleep 0.2; echo late; touch late) & echo now", cwd=workspace, timeout=10
    )
    await trio.sleep(0.5)
    after = await sandbox.run_shell("echo next", cwd=workspace, timeout=10)
    assert (outcome.output, after.output) == ("now\n", "next\n")
    assert not (workspace / "late").exists()
    await sandbox.aclose()


async def test_output_without_a_final_newline_is_kept_whole(bwrap: str, workspace: Path) -> None:
    sandbox = confined(workspace)
    outcome = await sandbox.run_shell("printf 'no newline'; exit 3", cwd=workspace, timeout=10)
    assert (outcome.output, outcome.exit_code) == ("no newline", 3)
    await sandbox.aclose()


async def test_after_a_timeout_the_next_command_gets_a_fresh_sandbox(
    bwrap: str, workspace: Path
) -> None:
    sandbox = confined(workspace)
    await sandbox.run_shell("touch /tmp/before", cwd=workspace, timeout=10)
    timed_out = await sandbox.run_shell("sleep 30", cwd=workspace, timeout=0.3)
    after = await sandbox.run_shell("test -e /tmp/before || echo new", cwd=workspace, timeout=10)
    assert timed_out.timed_out
    assert after.output == "new\n"  # a new bubblewrap: a new /tmp
    await sandbox.aclose()


async def test_a_command_that_kills_its_session_shell_ends_and_the_next_runs(
    bwrap: str, workspace: Path
) -> None:
    sandbox = confined(workspace)
    killer = await sandbox.run_shell("kill -KILL $PPID; sleep 5", cwd=workspace, timeout=10)
    after = await sandbox.run_shell("echo ok", cwd=workspace, timeout=10)
    assert not killer.timed_out and killer.exit_code != 0
    assert (after.output, after.exit_code) == ("ok\n", 0)
    await sandbox.aclose()


async def test_commands_at_once_run_at_once(bwrap: str, workspace: Path) -> None:
    sandbox = confined(workspace)
    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(lambda: sandbox.run_shell("sleep 1", cwd=workspace, timeout=10))
    assert trio.current_time() - started < 2.5  # one after another would take 3 s
    await sandbox.aclose()
    assert until(lambda: not bubblewraps(workspace), 1.0)


async def test_a_directory_replaced_on_the_host_is_the_one_commands_see(
    bwrap: str, workspace: Path, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    (context / "old").write_text("")
    sandbox = confined(workspace, mounts=(Mount(path=context, writable=False),))
    before = await sandbox.run_shell(f"ls {context}", cwd=workspace, timeout=10)
    shutil.rmtree(context)
    context.mkdir()
    (context / "new").write_text("")
    after = await sandbox.run_shell(f"ls {context}", cwd=workspace, timeout=10)
    assert (before.output, after.output) == ("old\n", "new\n")
    await sandbox.aclose()


async def test_a_sandbox_dropped_unclosed_kills_its_bubblewrap(bwrap: str, workspace: Path) -> None:
    sandbox: LocalSandbox | None = confined(workspace)
    assert sandbox is not None
    await sandbox.run_shell("true", cwd=workspace, timeout=10)
    assert bubblewraps(workspace)
    sandbox = None
    gc.collect()
    assert until(lambda: not bubblewraps(workspace), 1.0)


async def test_a_command_killed_by_a_signal_shows_only_its_own_output(
    bwrap: str, workspace: Path
) -> None:
    sandbox = confined(workspace)
    outcome = await sandbox.run_shell("echo a; kill -KILL $$", cwd=workspace, timeout=10)
    assert (outcome.output, outcome.exit_code) == ("a\n", 128 + 9)
    await sandbox.aclose()


async def test_a_runs_agents_leave_no_bubblewrap_behind(bwrap: str, tmp_path: Path) -> None:
    seconds = duration()
    step = ToolStep(tool="run_shell", arguments={"command": f"sleep {seconds} & echo ran"})
    backend = ScriptedBackendConfig(tool_steps=(step,))
    agents = tuple(AgentConfig(id=f"a{i}", backend=attrs.evolve(backend, seed=i)) for i in (1, 2))
    config = ConclaveConfig(
        agents=agents, orchestrator=OrchestratorConfig(tools=True, quiet_period=None)
    )
    tap = MemoryTap()
    await run(RunSpec(task=TASK, config=config, log_dir=tmp_path / "run"), taps=[tap])
    shells = [e for e in tap.of_type(ToolCallFinished) if e.tool == "run_shell"]
    assert len(shells) == 2 and all(e.ok and "ran" in e.output for e in shells)
    assert until(lambda: not bubblewraps(tmp_path / "run"), 1.0)
    assert killed(seconds)
