"""A run resuming a paused one (``RunSpec.resume``) opens its services on copies of the
paused run's workspaces, its answers' snapshots published again under their labels."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.agent.resume import ResumePoint
from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.llm.protocol import CallPurpose
from conclave.actors.run.services import open_services
from conclave.actors.run.spec import RunSpec
from conclave.actors.workspace.layout import RunLayout
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig
from tests.coordination.helpers import TASK


def _resuming(paused: Path, log_dir: Path) -> RunSpec:
    added = AnswerAdded(at=0.0, agent="a1", label="agent1.1", content="answer")
    point = ResumePoint(
        agent="a1",
        purpose=CallPurpose.PRESENT,
        round=2,
        messages=(),
        prompt_length=0,
        question_id="q1",
        answer="yes",
        last_question=1,
        history=(added,),
        workdir=paused,
    )
    agents = (AgentConfig(id="a1", backend=ScriptedBackendConfig()),)
    config = ConclaveConfig(agents=agents, orchestrator=OrchestratorConfig(tools=True))
    return RunSpec(task=TASK, config=config, log_dir=log_dir, resume=point)


async def test_the_paused_runs_answer_snapshots_are_published_in_the_resumed_run(
    tmp_path: Path,
) -> None:
    paused = RunLayout(tmp_path / "paused")
    paused.create(["a1"])
    paused.snapshot("agent1.1").mkdir()
    (paused.snapshot("agent1.1") / "notes.txt").write_text("answer")
    spec = _resuming(paused.root, tmp_path / "paused" / "resumed-1")

    async with open_services(spec) as services:
        await services.start()
        workspaces = services.workspaces

    assert workspaces is not None
    assert workspaces.published == {"agent1.1": workspaces.layout.snapshot("agent1.1")}
    assert (workspaces.published["agent1.1"] / "notes.txt").read_text() == "answer"
