"""The tool executor of one agent: what it offers, and how each call is run.

Per call: the tool must be offered in the collaboration mode (plan mode offers only
read-only tools, and the context refuses writes a second time), its arguments must fit the
schema, the ``before_call`` hook may refuse it, then the tool runs, timed, and what the model
sees is capped. Every failure, path refusals and tool bugs included, becomes a result with
``ok=False``: the executor never raises into the loop. Cancellation propagates, and a tool
that is cancelled leaves no partial write behind (writes go through a temporary file and a
rename, see :mod:`actors.tools.fs`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from conclave.actors.llm.protocol import ToolCall, ToolSchema
from conclave.actors.tools.arguments import ArgumentError, parse_arguments
from conclave.actors.tools.catalogue import ALL_TOOLS
from conclave.actors.tools.paths import PathPolicy, PathRefused
from conclave.actors.tools.protocol import ToolResult
from conclave.actors.tools.spec import ToolContext, ToolError, ToolLimits, ToolSpec
from conclave.actors.tools.text import cap
from conclave.config.modes import CollaborationMode

if TYPE_CHECKING:
    # Types only: the sandbox package loads the docker SDK, which file tools never need.
    from conclave.actors.sandbox.protocol import Sandbox

__all__ = ["DEFAULT_LIMITS", "AgentTools", "BeforeCall", "ToolLimits", "agent_tools"]

DEFAULT_LIMITS = ToolLimits()

BeforeCall = Callable[[ToolCall, ToolSpec, Mapping[str, Any]], Awaitable[str | None]]
"""Asked before a call runs, with the tool's spec and the checked arguments (approval gates,
:class:`~actors.human.tool_approval.ToolApprovalGate`): a refusal reason for the model, or
``None``."""


def agent_tools(
    *,
    agent: str,
    mode: CollaborationMode,
    policy: PathPolicy,
    sandbox: Sandbox | None,
    workspace: Path,
    limits: ToolLimits = DEFAULT_LIMITS,
    before_call: BeforeCall | None = None,
    extra: Iterable[ToolSpec] = (),
) -> AgentTools:
    """The executor for one agent's loop in ``mode``; ``sandbox`` ``None`` offers no shell.
    ``extra`` tools are offered after the built-in ones (``update_plan`` while a plan
    executes)."""
    specs = [s for s in ALL_TOOLS if sandbox is not None or s.name != "run_shell"]
    specs += extra
    context = ToolContext(
        agent=agent,
        policy=policy,
        sandbox=sandbox,
        workspace=workspace,
        limits=limits,
        may_write=mode is not CollaborationMode.PLAN,
    )
    return AgentTools(specs, context=context, mode=mode, before_call=before_call)


class AgentTools:
    """A :class:`~actors.tools.protocol.ToolExecutor` over a fixed set of specs."""

    def __init__(
        self,
        specs: Iterable[ToolSpec],
        *,
        context: ToolContext,
        mode: CollaborationMode,
        before_call: BeforeCall | None = None,
    ) -> None:
        self.context = context
        self.mode = mode
        self.before_call = before_call
        self._known = {s.name: s for s in specs}
        planning = mode is CollaborationMode.PLAN
        self._offered = {n: s for n, s in self._known.items() if s.read_only or not planning}
        self._schemas = tuple(s.schema() for s in self._offered.values())
        self._withheld = tuple(s.schema() for n, s in self._known.items() if n not in self._offered)

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def withheld(self) -> tuple[ToolSchema, ...]:
        return self._withheld

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run ``call``; every failure is an error result. Cancellation propagates."""
        started = trio.current_time()
        result = await self._run(call)
        limit = self.context.limits.max_output_bytes
        # What the tool already lost (the sandbox's output cap) is counted in the note of
        # the text that holds the output: the error when the call failed.
        dropped = result.metadata.truncated_bytes
        if result.error is None:
            output, cut_output = cap(result.output, limit, dropped=dropped)
            error, cut_error = None, 0
        else:
            output, cut_output = cap(result.output, limit)
            error, cut_error = cap(result.error, limit, dropped=dropped)
        metadata = attrs.evolve(
            result.metadata,
            truncated_bytes=dropped + cut_output + cut_error,
            duration=trio.current_time() - started,
        )
        return attrs.evolve(result, output=output, error=error, metadata=metadata)

    async def _run(self, call: ToolCall) -> ToolResult:
        spec = self._offered.get(call.name)
        if spec is None:
            return ToolResult(ok=False, refused=True, error=self._not_offered(call.name))
        try:
            arguments = parse_arguments(call.arguments, spec.parameters, tool=spec.name)
        except ArgumentError as exc:
            return ToolResult(ok=False, refused=True, error=str(exc))
        try:
            if self.before_call is not None:
                refusal = await self.before_call(call, spec, arguments)
                if refusal is not None:
                    return ToolResult(
                        ok=False,
                        refused=True,
                        error=f"the call to {call.name} was refused: {refusal}",
                    )
            return await spec.run(self.context, arguments)
        except PathRefused as exc:
            return ToolResult(ok=False, refused=True, error=str(exc))
        except ToolError as exc:
            return ToolResult(ok=False, error=str(exc))
        except OSError as exc:
            return ToolResult(ok=False, error=_os_error(call.name, exc))
        except Exception as exc:
            return ToolResult(
                ok=False, error=f"the tool {call.name} failed: {type(exc).__name__}: {exc}"
            )

    def _not_offered(self, name: str) -> str:
        if name in self._known:
            return (
                f"{self.mode.value} mode is read-only: {name} changes files and is not "
                "available; use the read-only tools, and describe the change in your plan"
            )
        offered = ", ".join(self._offered) or "none"
        return f"there is no tool named {name!r}; the tools available are: {offered}"


_HINTS: dict[type[OSError], str] = {
    FileNotFoundError: "check the path with list_directory or glob",
    IsADirectoryError: "give a file, or use list_directory for a directory",
    NotADirectoryError: "a part of the path is a file, not a directory",
    PermissionError: "the file's permissions forbid this; choose another path",
}


def _os_error(tool: str, exc: OSError) -> str:
    what = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename else ""
    hint = next((h for kind, h in _HINTS.items() if isinstance(exc, kind)), "")
    return f"{tool} failed: {what}{where}" + (f"; {hint}" if hint else "")
