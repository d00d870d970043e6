"""In a whole run, every request an agent makes tells it where it works: its own workspace
directory, and each context path with what it may do there now (read-only while the agents
work, writable now in the presentation that writes it)."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.llm.protocol import CallPurpose, Completion, CompletionRequest, CompletionSink
from conclave.actors.prompts.coordination import parse_prompt
from conclave.actors.prompts.workspace import ContextAccess
from conclave.actors.run.driver import RunSpec, build_backend, run
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.context import ContextPath, ContextPermission
from tests.coordination.helpers import TASK


class _Recording:
    """The scripted backend, keeping every request it was sent."""

    requests: list[tuple[str, CompletionRequest]] = []

    def __init__(self, member: AgentConfig) -> None:
        self.agent = member.id
        self.inner = build_backend(member)

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append((self.agent, request))
        return await self.inner.complete(request, sink=sink)


async def test_every_request_says_the_agents_workspace_and_its_context_paths(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    agents = tuple(AgentConfig(id=f"a{i}", backend=ScriptedBackendConfig(seed=i)) for i in (1, 2))
    context = ContextPath(path=src, permission=ContextPermission.WRITE)
    orchestrator = OrchestratorConfig(quiet_period=None, context_paths=(context,))
    work = tmp_path / "work"
    _Recording.requests = []

    await run(
        RunSpec(
            task=TASK,
            config=ConclaveConfig(agents=agents, orchestrator=orchestrator),
            workdir=work,
            backend_factory=_Recording,
        )
    )

    requests = _Recording.requests
    assert {agent for agent, _ in requests} == {"a1", "a2"}
    for agent, request in requests:
        note = parse_prompt(request.messages).workspace
        assert note is not None
        assert note.workspace == str((work / "workspaces" / agent).resolve())
        [path] = note.context_paths
        assert path.path == str(src.resolve())
        presenting = request.purpose is CallPurpose.PRESENT
        want = ContextAccess.WRITABLE_NOW if presenting else ContextAccess.WRITABLE_LATER
        assert path.access is want
    assert any(r.purpose is CallPurpose.PRESENT for _, r in requests)
