"""What a tool is: a typed spec plus an async implementation, and what it runs with.

The implementation receives a :class:`ToolContext` and its arguments already checked against
the spec's schema. Paths go through the context, never straight to the policy: the context
holds the second plan-mode lock (``may_write``), so a write tool that somehow runs while
planning is still refused before it touches anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from conclave.actors.llm.protocol import ToolSchema
from conclave.actors.tools.paths import PathPolicy, PathRefused
from conclave.actors.tools.protocol import ToolResult

if TYPE_CHECKING:
    # Types only: the sandbox package loads the docker SDK, which file tools never need.
    from conclave.actors.sandbox.protocol import Sandbox

__all__ = ["ToolContext", "ToolError", "ToolLimits", "ToolRun", "ToolSpec", "WriteRefused"]


@attrs.frozen(kw_only=True)
class ToolLimits:
    """Caps on what a call reads and what the model sees."""

    max_output_bytes: int = 30_000
    """Output beyond this is cut, ending in ``[truncated: N bytes]``."""
    read_max_bytes: int = 256 * 1024
    """``read_file`` reads at most this much per call; the model pages with ``offset``."""
    read_default_lines: int = 2000
    max_line_chars: int = 2000
    """Longer lines are cut in ``read_file`` and ``search`` output."""
    list_max_entries: int = 500
    glob_max_results: int = 500
    search_max_matches: int = 200
    search_max_file_bytes: int = 2 * 1024 * 1024
    """``search`` skips files larger than this."""
    walk_max_entries: int = 100_000
    """``glob`` and ``search`` stop walking after this many directory entries."""
    diff_max_lines: int = 80
    diff_max_bytes: int = 1024 * 1024
    """Files larger than this get no diff (the write still happens)."""
    inline_io_bytes: int = 64 * 1024
    """Files up to this size are read and written in the trio thread: from the page cache
    that takes microseconds, less than a hop to a worker thread; larger ones go to a
    worker thread so the event loop never waits on them."""
    shell_default_timeout: float = 120.0
    shell_max_timeout: float = 600.0


class ToolError(Exception):
    """A tool cannot do what was asked; the message is written for the model."""


class WriteRefused(PathRefused):
    """A write attempted where no write may happen (plan mode); the message is for the model."""


@attrs.frozen(kw_only=True)
class ToolContext:
    agent: str
    policy: PathPolicy
    sandbox: Sandbox | None
    workspace: Path
    limits: ToolLimits
    may_write: bool
    """False in plan mode: every write path and every shell command is refused here, even if
    a write tool got past the executor."""

    def readable(self, path: str) -> Path:
        return self.policy.for_read(path)

    def writable(self, path: str) -> Path:
        self.require_write()
        return self.policy.for_write(path)

    def require_write(self) -> None:
        if not self.may_write:
            raise WriteRefused(
                "plan mode is read-only: nothing may be written or run; "
                "describe the change in your plan instead"
            )


ToolRun = Callable[[ToolContext, Mapping[str, Any]], Awaitable[ToolResult]]


@attrs.frozen(kw_only=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    """A JSON schema (the subset :mod:`actors.tools.arguments` checks)."""
    read_only: bool = False
    run: ToolRun

    def schema(self) -> ToolSchema:
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            read_only=self.read_only,
        )
