"""Shared pieces for the tools tests: grants that can change, a fake sandbox, one-call runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.sandbox.protocol import Mount, ShellOutcome
from conclave.actors.tools.executor import AgentTools
from conclave.actors.tools.paths import PathGrant
from conclave.actors.tools.protocol import ToolResult


@attrs.define
class MutableGrants:
    """Grants a test changes between calls, as a run does when snapshots appear."""

    items: list[PathGrant] = attrs.Factory(list)

    def grants(self) -> tuple[PathGrant, ...]:
        return tuple(self.items)


def grant(
    root: Path, *, writable: bool, label: str = "", protected: tuple[Path, ...] = ()
) -> PathGrant:
    return PathGrant(
        root=root.resolve(),
        writable=writable,
        label=label,
        protected=tuple(p.resolve() for p in protected),
    )


class ShellSandbox:
    """Runs commands for real with ``sh -c`` (no containment) and journals them, so a test
    can tell both whether the sandbox was asked and what a command would have done."""

    def __init__(self, *, refuse: str | None = None, outcome: ShellOutcome | None = None) -> None:
        self.commands: list[tuple[str, Path, float]] = []
        self.refuse = refuse
        self.outcome = outcome

    async def run_shell(self, command: str, *, cwd: Path, timeout: float) -> ShellOutcome:
        self.commands.append((command, cwd, timeout))
        if self.outcome is not None:
            return self.outcome
        done = await trio.run_process(
            ["sh", "-c", command], cwd=cwd, capture_stdout=True, stderr=-2, check=False
        )
        return ShellOutcome(
            exit_code=done.returncode,
            output=done.stdout.decode(),
            timed_out=False,
            duration=0.0,
        )

    async def remount(self, mounts: tuple[Mount, ...]) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def refusal(self) -> str | None:
        return self.refuse


async def call(tools: AgentTools, name: str, **arguments: Any) -> ToolResult:
    return await tools.execute(ToolCall(id="c1", name=name, arguments=json.dumps(arguments)))


async def call_raw(tools: AgentTools, name: str, raw: str) -> ToolResult:
    return await tools.execute(ToolCall(id="c1", name=name, arguments=raw))
