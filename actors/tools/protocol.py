"""What the loop engine needs from tools: their schemas, and a way to run one call.

An executor never raises into the loop: a failure is a result with ``ok=False`` whose error
goes back to the model. Whether a call may run concurrently with others is the schema's
``read_only`` flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import attrs

from conclave.actors.llm.protocol import ToolCall, ToolSchema

__all__ = ["NO_TOOLS", "NoTools", "ToolExecutor", "ToolMetadata", "ToolResult"]


@attrs.frozen(kw_only=True)
class ToolMetadata:
    """What a call did, beside the text the model sees (for events, trackers and tests)."""

    bytes: int = 0
    """Bytes the tool read or wrote."""
    truncated_bytes: int = 0
    """Bytes of output the model was not shown."""
    paths_written: tuple[Path, ...] = ()
    """Resolved paths the call created, changed or deleted."""
    duration: float = 0.0
    """Seconds the call took, checks included."""
    exit_code: int | None = None
    """A shell command's exit code (``None`` for other tools, and for a killed command)."""


@attrs.frozen(kw_only=True)
class ToolResult:
    ok: bool
    output: str = ""
    error: str | None = None
    refused: bool = False
    """The call never ran: a check refused it (a tool not offered, arguments that do not
    fit, a path outside the grants, an approval denied); ``error`` says why."""
    metadata: ToolMetadata = ToolMetadata()

    def for_model(self) -> str:
        """The text the model sees in the ``tool`` message."""
        return self.output if self.ok else f"Error: {self.error or 'the tool failed'}"


class ToolExecutor(Protocol):
    def schemas(self) -> tuple[ToolSchema, ...]:
        """The tools offered in the current step."""
        ...

    def withheld(self) -> tuple[ToolSchema, ...]:
        """Tools the executor has but does not offer now (plan mode withholds those that
        write). A call to one is no broken reply: it runs as a call the executor refuses,
        saying why, and the model reads that, as it reads any refusal."""
        ...

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one call; never raises (cancellation aside)."""
        ...


class NoTools:
    """Offers nothing and refuses everything: workflow rounds and plain presentations."""

    def schemas(self) -> tuple[ToolSchema, ...]:
        return ()

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        return ToolResult(ok=False, error=f"no tool {call.name!r} is available")


NO_TOOLS = NoTools()
