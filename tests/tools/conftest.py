"""Fixtures: a workspace the agent may write, a directory outside it, and its executor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conclave.actors.tools.executor import (
    DEFAULT_LIMITS,
    AgentTools,
    BeforeCall,
    ToolLimits,
    agent_tools,
)
from conclave.actors.tools.paths import PathPolicy
from conclave.config.modes import CollaborationMode
from tests.tools.helpers import MutableGrants, ShellSandbox, grant

MakeTools = Callable[..., AgentTools]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("the secret\n")
    return path.resolve()


@pytest.fixture
def grants(workspace: Path) -> MutableGrants:
    return MutableGrants([grant(workspace, writable=True, label="workspace")])


@pytest.fixture
def sandbox() -> ShellSandbox:
    return ShellSandbox()


@pytest.fixture
def make_tools(workspace: Path, grants: MutableGrants, sandbox: ShellSandbox) -> MakeTools:
    def make(
        mode: CollaborationMode = CollaborationMode.DEFAULT,
        limits: ToolLimits = DEFAULT_LIMITS,
        with_sandbox: bool = True,
        before_call: BeforeCall | None = None,
    ) -> AgentTools:
        return agent_tools(
            agent="agent1",
            mode=mode,
            policy=PathPolicy(grants, cwd=workspace),
            sandbox=sandbox if with_sandbox else None,
            workspace=workspace,
            limits=limits,
            before_call=before_call,
        )

    return make


@pytest.fixture
def tools(make_tools: MakeTools) -> AgentTools:
    return make_tools()
