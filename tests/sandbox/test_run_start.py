"""What a run says of its sandbox as it starts (``sandbox_opened``): a person learns before
any command runs that commands are unconfined, and how (an orphan sweep's line is in
test_orphans); the REPL prints it too."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.events import SandboxOpened
from conclave.actors.sandbox import limits, local
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.runtime import MemoryTap
from conclave.ui.timeline import describe
from tests.coordination.helpers import TASK
from tests.repl.harness import Session, play
from tests.repl.harness import config as repl_config


async def opened(tmp_path: Path) -> SandboxOpened:
    config = ConclaveConfig(
        agents=(AgentConfig(id="a1"),), orchestrator=OrchestratorConfig(tools=True)
    )
    tap = MemoryTap()
    await run(RunSpec(task=TASK, config=config, log_dir=tmp_path / "run"), taps=[tap])
    [event] = tap.of_type(SandboxOpened)
    return event


async def test_without_bubblewrap_the_run_says_at_start_that_commands_are_unconfined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "bubblewrap", lambda: None)
    event = await opened(tmp_path)
    assert (event.sandbox, event.confined, event.network) == ("local", False, True)
    assert event.warning is not None
    assert "unconfined" in event.warning and "apt-get install bubblewrap" in event.warning
    line = describe(event)
    assert line is not None and line.startswith("sandbox local (UNCONFINED, network on): ")


async def test_with_bubblewrap_the_start_is_a_detail(bwrap: str, tmp_path: Path) -> None:
    event = await opened(tmp_path)
    assert (event.confined, event.network, event.warning) == (True, False, None)
    assert describe(event) is None
    assert describe(event, verbose=True) == "sandbox local (confined, no network)"


async def test_a_run_without_tools_has_no_sandbox_to_speak_of(tmp_path: Path) -> None:
    config = ConclaveConfig(agents=(AgentConfig(id="a1"),))
    tap = MemoryTap()
    await run(RunSpec(task=TASK, config=config, log_dir=tmp_path / "run"), taps=[tap])
    assert tap.of_type(SandboxOpened) == []


async def test_a_shell_without_a_process_limit_is_said_at_start(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "nproc_flag", lambda: None)
    monkeypatch.setattr(limits, "own_user_namespace", lambda confined: confined)
    event = await opened(tmp_path)
    assert event.warning == "this host's sh cannot set a process limit (ulimit): none is set"


def test_the_repl_prints_the_warning_as_its_turn_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "bubblewrap", lambda: None)
    printed: list[str] = []

    async def scenario(session: Session) -> None:
        await session.result_of("Look around")
        printed.append(session.transcript())

    play(scenario, tmp_path, conclave=repl_config(1, tools=True))
    assert "sandbox local (UNCONFINED, network on): shell commands are unconfined" in printed[0]
