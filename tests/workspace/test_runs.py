"""Workspaces in whole runs: answers leave snapshots that the agents shown them can read (and
no others), the presenter's workspace becomes ``final/``, and a run without tools has none
of it. Scripted agents with tool steps do the file work; no clock is faked (the copies run
in worker threads, and latencies are zero)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.coordination.protocol import WrappedUp
from conclave.actors.events.loop import ToolCallFinished
from conclave.actors.llm.errors import FatalLLMError
from conclave.actors.llm.protocol import CallPurpose, Completion, CompletionRequest, CompletionSink
from conclave.actors.run.driver import RunSpec, build_backend, run
from conclave.actors.run.result import Termination
from conclave.actors.workspace.events import (
    FinalWorkspaceSaved,
    PresentingForWrites,
    SnapshotPublished,
)
from conclave.actors.workspace.tracker import TakeBaseline
from conclave.actors.workspace.writes import Writes
from conclave.config.modes import CollaborationMode
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    FinalAnswerStrategy,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.backends import ToolStep
from conclave.config.schema.context import ContextPath, ContextPermission
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind
from conclave.runtime import Address, Delivered, Envelope, MemoryTap
from tests.coordination.helpers import TASK, Recorder

NOTES = ToolStep(tool="write_file", arguments={"path": "notes.txt", "content": "by {agent}"})


def _agents(n: int, **backend: Any) -> tuple[AgentConfig, ...]:
    return tuple(
        AgentConfig(id=f"a{i}", backend=ScriptedBackendConfig(seed=i, **backend))
        for i in range(1, n + 1)
    )


def _config(*agents: AgentConfig, **orchestrator: Any) -> ConclaveConfig:
    fields: dict[str, Any] = {"quiet_period": None, "tools": True, **orchestrator}
    return ConclaveConfig(agents=agents, orchestrator=OrchestratorConfig(**fields))


async def _run(config: ConclaveConfig, tmp_path: Path, **spec: Any) -> MemoryTap:
    tap = MemoryTap()
    await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work", **spec), taps=[tap])
    return tap


async def test_an_accepted_answer_leaves_a_snapshot_of_its_workspace(tmp_path: Path) -> None:
    await _run(_config(*_agents(2, tool_steps=(NOTES,))), tmp_path)

    snapshots = tmp_path / "work" / "snapshots"
    assert (snapshots / "agent1.1" / "notes.txt").read_text() == "by a1"
    assert (snapshots / "agent2.1" / "notes.txt").read_text() == "by a2"


async def test_the_snapshot_is_published_before_any_peer_is_told_of_the_answer(
    tmp_path: Path,
) -> None:
    tap = await _run(_config(*_agents(3, tool_steps=(NOTES,))), tmp_path)

    events = tap.events
    for published in tap.of_type(SnapshotPublished):
        told = [
            i
            for i, e in enumerate(events)
            if isinstance(e, Delivered)
            and any(
                getattr(view, "label", None) == published.label
                for view in getattr(e.envelope.payload, "answers", ())
            )
        ]
        assert told
        assert events.index(published) < min(told)


async def test_agents_read_the_snapshots_of_answers_they_are_shown_and_no_others(
    tmp_path: Path,
) -> None:
    """Ring of four: agent3's answer is shown to its neighbours a2 and a4, never to a1."""
    theirs = tmp_path / "work" / "snapshots" / "agent3.1" / "notes.txt"
    peek = ToolStep(tool="read_file", arguments={"path": str(theirs)})
    config = _config(
        *_agents(4, tool_steps=(NOTES,), vote_tool_steps=(peek,)),
        visibility="ring",
        defer_voting_until_all_answered=True,
    )

    tap = await _run(config, tmp_path)

    reads = {e.agent: e for e in tap.of_type(ToolCallFinished) if e.tool == "read_file"}
    assert reads["a2"].ok and "by a3" in reads["a2"].output
    assert reads["a4"].ok and "by a3" in reads["a4"].output
    assert not reads["a1"].ok
    assert "outside the paths you may read" in (reads["a1"].error or "")


async def test_a_prompt_says_where_each_answers_snapshot_is(tmp_path: Path) -> None:
    recorder = Recorder()
    config = _config(*_agents(2, tool_steps=(NOTES,)), defer_voting_until_all_answered=True)

    await _run(config, tmp_path, backend_factory=recorder)

    snapshot = tmp_path / "work" / "snapshots" / "agent2.1"
    assert any(str(snapshot.resolve()) in prompt for prompt in recorder.prompts("a1"))


async def test_the_presenters_workspace_is_the_deliverable_in_final(tmp_path: Path) -> None:
    finish = ToolStep(
        tool="write_file", arguments={"path": "final.txt", "content": "presented by {agent}"}
    )
    config = _config(
        *_agents(2, tool_steps=(NOTES,), presentation_tool_steps=(finish,)),
    )
    tap = MemoryTap()

    result = await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work"), taps=[tap])

    final = (tmp_path / "work" / "final").resolve()
    assert result.workspace_path == str(final)
    assert (final / "final.txt").read_text() == f"presented by {result.presenter}"
    assert (final / "notes.txt").read_text() == f"by {result.presenter}"
    (saved,) = tap.of_type(FinalWorkspaceSaved)
    assert saved.agent == result.presenter


async def test_without_a_presentation_the_chosen_answers_snapshot_is_the_deliverable(
    tmp_path: Path,
) -> None:
    reuse = FinalAnswerStrategy.WINNER_REUSE
    config = _config(*_agents(2, tool_steps=(NOTES,)), final_answer_strategy=reuse)

    result = await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work"))

    assert result.workspace_path is not None
    assert (Path(result.workspace_path) / "notes.txt").read_text() == f"by {result.winner}"


async def test_the_workdir_defaults_to_the_log_dir(tmp_path: Path) -> None:
    config = _config(*_agents(1, tool_steps=(NOTES,)))

    result = await run(RunSpec(task=TASK, config=config, log_dir=tmp_path / "log"))

    assert result.workspace_path == str((tmp_path / "log" / "final").resolve())
    assert (tmp_path / "log" / "workspaces" / "a1" / "notes.txt").is_file()


async def test_a_run_without_tools_lays_out_nothing_and_offers_only_workflow_tools(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    config = ConclaveConfig(agents=_agents(2), orchestrator=OrchestratorConfig(quiet_period=None))

    result = await run(
        RunSpec(task=TASK, config=config, log_dir=tmp_path / "log", backend_factory=recorder)
    )

    assert result.workspace_path is None
    assert not (tmp_path / "log" / "workspaces").exists()
    offered = {t.name for b in recorder.backends.values() for r in b.requests for t in r.tools}
    assert offered <= {"new_answer", "vote"}


async def test_an_answer_is_added_once_its_snapshot_exists(tmp_path: Path) -> None:
    tap = await _run(_config(*_agents(2, tool_steps=(NOTES,))), tmp_path)

    for added in tap.of_type(AnswerAdded):
        published = [e for e in tap.of_type(SnapshotPublished) if e.label == added.label]
        assert published
        assert tap.events.index(published[0]) < tap.events.index(added)


class _CrashOnce:
    """Crashes ``actor`` the first time it is about to handle a ``payload`` message."""

    def __init__(self, actor: str, payload: type[Any]) -> None:
        self.actor = actor
        self.payload = payload
        self.crashed = 0

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        return None

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None

    def crash_during(self, actor: Address, envelope: Envelope) -> str | None:
        if actor.kind != self.actor or not isinstance(envelope.payload, self.payload):
            return None
        if self.crashed:
            return None
        self.crashed += 1
        return f"{self.actor} crashes on {self.payload.__name__}"


async def test_a_coordinator_that_crashes_while_wrapping_up_wraps_up_again(
    tmp_path: Path,
) -> None:
    plan = _CrashOnce("coordinator", WrappedUp)
    config = _config(*_agents(2, tool_steps=(NOTES,)))

    with trio.fail_after(30):  # without wrapping up again, the run would never end
        result = await run(
            RunSpec(task=TASK, config=config, workdir=tmp_path / "work", faults=plan)
        )

    assert plan.crashed == 1
    assert result.termination is Termination.COMPLETED
    assert result.workspace_path is not None
    assert (Path(result.workspace_path) / "notes.txt").is_file()


async def test_plan_mode_tracks_no_writes_and_presents_nothing_for_them(tmp_path: Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    context = ContextPath(path=ctx, permission=ContextPermission.WRITE)
    reuse = FinalAnswerStrategy.WINNER_REUSE
    config = _config(*_agents(2), context_paths=(context,), final_answer_strategy=reuse)
    tap = MemoryTap()

    result = await run(
        RunSpec(task=TASK, config=config, workdir=tmp_path / "work", mode=CollaborationMode.PLAN),
        taps=[tap],
    )

    assert result.final_answer is not None
    assert tap.of_type(PresentingForWrites) == []
    assert result.writes == Writes()


class _FailsToPresent:
    """The scripted backend, except that every presentation call fails for good."""

    def __init__(self, member: AgentConfig) -> None:
        self.inner = build_backend(member)

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if request.purpose is CallPurpose.PRESENT:
            raise FatalLLMError("the presentation is refused")
        return await self.inner.complete(request, sink=sink)


async def test_a_failed_presentation_delivers_the_chosen_answers_snapshot(
    tmp_path: Path,
) -> None:
    config = _config(*_agents(2, tool_steps=(NOTES,)))
    work = tmp_path / "work"

    result = await run(
        RunSpec(task=TASK, config=config, workdir=work, backend_factory=_FailsToPresent)
    )

    assert result.presentation_error is not None
    assert result.workspace_path is not None
    assert (Path(result.workspace_path) / "notes.txt").read_text() == f"by {result.winner}"


def test_running_without_tools_never_imports_the_docker_sdk() -> None:
    """Importing the docker SDK costs ~0.2 s of every command's start-up; only runs whose
    agents have tools (and so may have docker sandboxes) load it."""
    import subprocess
    import sys

    probe = "import sys, conclave.actors.run.driver; print('docker' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )

    assert found.stdout.strip() == "False"


async def test_a_workdir_that_cannot_be_made_fails_the_run_saying_why(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    config = _config(*_agents(1))

    result = await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "a-file" / "work"))

    assert result.termination is Termination.FAILED
    assert "starting failed" in (result.failure_reason or "")
    assert "a-file" in (result.failure_reason or "")


async def test_an_unreachable_docker_engine_fails_the_run_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    config = _config(*_agents(1), sandbox=SandboxConfig(type=SandboxKind.DOCKER))

    result = await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work"))

    assert result.termination is Termination.FAILED
    assert "no Docker engine is reachable" in (result.failure_reason or "")


async def test_a_shell_command_without_a_timeout_gets_the_configured_one(tmp_path: Path) -> None:
    slow = ToolStep(tool="run_shell", arguments={"command": "sleep 30"})
    sandbox = SandboxConfig(shell_timeout=0.2)
    config = _config(*_agents(1, presentation_tool_steps=(slow,)), sandbox=sandbox)
    tap = MemoryTap()

    with trio.fail_after(20):
        await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work"), taps=[tap])

    (shell,) = [e for e in tap.of_type(ToolCallFinished) if e.tool == "run_shell"]
    assert "killed after 0.2s" in (shell.error or "")


class _CrashAfter:
    """Crashes ``actor`` once, right after it handled a ``payload`` message."""

    def __init__(self, actor: str, payload: type[Any]) -> None:
        self.actor = actor
        self.payload = payload
        self.crashed = 0

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        if actor.kind != self.actor or not isinstance(envelope.payload, self.payload):
            return None
        if self.crashed:
            return None
        self.crashed += 1
        return f"{self.actor} crashes after {self.payload.__name__}"

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None


async def test_a_write_tracker_restarted_after_its_baseline_keeps_it(tmp_path: Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    made = ToolStep(tool="write_file", arguments={"path": f"{ctx}/made.txt", "content": "x"})
    context = ContextPath(path=ctx, permission=ContextPermission.WRITE)
    config = _config(*_agents(2, presentation_tool_steps=(made,)), context_paths=(context,))
    plan = _CrashAfter("write_tracker", TakeBaseline)

    with trio.fail_after(30):
        result = await run(
            RunSpec(task=TASK, config=config, workdir=tmp_path / "work", faults=plan)
        )

    assert plan.crashed == 1
    assert result.writes == Writes.of(new=[str(ctx / "made.txt")])
