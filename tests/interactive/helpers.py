"""An interactive session on scripted agents with no latency, its runs logged under a
temporary directory, and a backend wrapper that records every request the agent makes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from conclave.actors.human.run_approval import RunApprover
from conclave.actors.interactive.launcher import HubDriver, RunLauncher
from conclave.actors.interactive.project import Project
from conclave.actors.interactive.session import InteractiveSession, interactive_agent
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.spec import build_backend
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from conclave.config.schema.interactive import InteractiveModeConfig


def panel(n: int = 3, *, latency: float = 0.0) -> ConclaveConfig:
    return ConclaveConfig(
        agents=tuple(
            AgentConfig(
                id=f"agent-{i}",
                persona=f"persona {i}",
                backend=ScriptedBackendConfig(seed=i, latency=latency),
            )
            for i in range(1, n + 1)
        )
    )


class Recording:
    """A backend that keeps each request it is sent."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner
        self.requests: list[CompletionRequest] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        return await self.inner.complete(request, sink=sink)


def session(
    tmp_path: Path,
    *,
    config: ConclaveConfig | None = None,
    settings: InteractiveModeConfig | None = None,
    approver: RunApprover | None = None,
    project: Project | None = None,
) -> tuple[InteractiveSession, Recording]:
    config = config or panel()
    settings = settings or InteractiveModeConfig()
    backend = Recording(build_backend(interactive_agent(config, settings)))
    launcher = RunLauncher(
        resolved=ResolvedConfig(base=config),
        driver=HubDriver(),
        approver=approver,
        log_root=tmp_path / "runs",
        project=project,
    )
    return InteractiveSession(
        config=config, settings=settings, backend=backend, launcher=launcher
    ), backend


def tool_names(backend: Recording) -> Sequence[set[str]]:
    return [{t.name for t in r.tools} for r in backend.requests]
