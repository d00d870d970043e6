"""MCP tools as the executor knows tools: a :class:`~actors.tools.spec.ToolSpec` each.

A server's tool becomes ``mcp__<server>__<tool>`` with the server's JSON schema, read-only as
the config says or, if it says nothing, as the tool's ``readOnlyHint`` says. The specs run in
an :class:`~actors.tools.executor.AgentTools` like the built-in tools, so an MCP call gets the
same treatment: plan mode offers only read-only tools and refuses the others (and the spec
refuses a write a second time, through its context), arguments are checked against the
schema, the ``before_call`` hook is asked, output is capped, and the agent's round records
``ToolCallStarted``/``ToolCallFinished``.

A call waits for its server if it is restarting, within the server's ``call_timeout``, which
bounds the whole call: past it the request is cancelled (the SDK tells the server) and the
model is told. Cancelling the round cancels the request the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import trio

from conclave.actors.mcp.server import McpServerState, ServerDown, ServerStatus, tool_name
from conclave.actors.tools.executor import DEFAULT_LIMITS, AgentTools, BeforeCall
from conclave.actors.tools.paths import PathPolicy, StaticGrants
from conclave.actors.tools.protocol import NO_TOOLS, ToolExecutor, ToolMetadata, ToolResult
from conclave.actors.tools.spec import ToolContext, ToolError, ToolSpec
from conclave.config.modes import CollaborationMode

__all__ = ["McpAndBuiltinTools", "mcp_specs", "with_mcp_tools"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every LLM API accepts as a tool name; a server's tool whose full name does not fit
is not offered."""


def mcp_specs(states: Iterable[McpServerState]) -> list[ToolSpec]:
    """The specs of every offered tool of the servers that started."""
    specs: list[ToolSpec] = []
    for state in states:
        if state.status is ServerStatus.FAILED and not state.tools:
            continue  # never started: nothing is offered
        for tool in state.offered():
            name = tool_name(state.config.name, tool.name)
            if not _TOOL_NAME.match(name):
                continue
            read_only = state.config.is_read_only(tool.name, tool.read_only_hint)
            specs.append(
                ToolSpec(
                    name=name,
                    description=f"[MCP server {state.config.name}] {tool.description}",
                    parameters=_object_schema(tool.input_schema),
                    read_only=read_only,
                    run=partial(_call, state, tool.name, read_only),
                )
            )
    return specs


def _object_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's input schema; one with no ``type`` is made an object schema (APIs ask it)."""
    return dict(schema) if "type" in schema else {"type": "object", **schema}


async def _call(
    state: McpServerState,
    tool: str,
    read_only: bool,
    context: ToolContext,
    arguments: Mapping[str, Any],
) -> ToolResult:
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if not read_only:
        context.require_write()  # plan mode: refused here too, should it get past the executor
    name = tool_name(state.config.name, tool)
    timeout = state.config.call_timeout
    deadline = trio.current_time() + timeout
    # A read-only call the server lost (it crashed) is made once more on the restarted
    # server; any other may have done its work before the server went, so it is not.
    tries = 2 if read_only else 1
    result = None
    with trio.move_on_at(deadline) as scope:
        for attempt in range(1, tries + 1):
            try:
                connection = await state.connection(deadline)
            except ServerDown as exc:
                raise ToolError(str(exc)) from None
            try:
                result = await connection.client.call_tool(tool, dict(arguments))
                break
            except MCPError as exc:
                if exc.code != CONNECTION_CLOSED:
                    raise ToolError(
                        f"the MCP server {state.key!r} refused the call: {exc}"
                    ) from None
                connection.mark_lost()
                if attempt == tries:
                    raise ToolError(_gone(state)) from None
            except OSError as exc:
                connection.mark_lost()
                if attempt == tries:
                    raise ToolError(f"{_gone(state)} ({exc})") from None
    if scope.cancelled_caught or result is None:
        raise ToolError(
            f"{name} took longer than {timeout:g} s (the call_timeout of MCP server "
            f"{state.key!r}) and was cancelled"
        )
    text = _text(result)
    metadata = ToolMetadata(bytes=len(text.encode("utf-8", "replace")))
    if result.is_error:
        return ToolResult(ok=False, error=text or f"{name} failed", metadata=metadata)
    return ToolResult(ok=True, output=text, metadata=metadata)


def _gone(state: McpServerState) -> str:
    return (
        f"the MCP server {state.key!r} went away during the call; it is being restarted: call again"
    )


def _text(result: Any) -> str:
    """What the model sees of a ``CallToolResult``: its text, and a line for other content."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind} {block.mime_type}, about {size:,} bytes, not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.uri}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[binary resource {resource.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(orjson.dumps(result.structured_content).decode())
    return "\n".join(parts)


class McpAndBuiltinTools:
    """One agent's executor: its built-in tools and its MCP tools, each set run by an
    :class:`AgentTools` of the same mode and hook. MCP names start ``mcp__``."""

    def __init__(self, builtin: ToolExecutor, mcp: AgentTools) -> None:
        self.builtin = builtin
        self.mcp = mcp

    def schemas(self) -> tuple[Any, ...]:
        return self.builtin.schemas() + self.mcp.schemas()

    def withheld(self) -> tuple[Any, ...]:
        return self.builtin.withheld() + self.mcp.withheld()

    async def execute(self, call: Any) -> ToolResult:
        if call.name.startswith("mcp__") or self.builtin is NO_TOOLS:
            return await self.mcp.execute(call)
        return await self.builtin.execute(call)


def with_mcp_tools(
    builtin: ToolExecutor,
    states: Iterable[McpServerState],
    *,
    agent: str,
    mode: CollaborationMode,
    before_call: BeforeCall | None = None,
) -> ToolExecutor:
    """``builtin`` with the MCP tools of ``states`` added (``builtin`` itself if none), asking
    ``builtin``'s ``before_call`` hook, else ``before_call`` (an agent without built-in tools)."""
    specs = mcp_specs(states)
    if not specs:
        return builtin
    if isinstance(builtin, AgentTools):
        context, before_call = builtin.context, builtin.before_call
    else:
        # No built-in tools: MCP tools touch no path, so the context grants none.
        here = Path.cwd()
        context = ToolContext(
            agent=agent,
            policy=PathPolicy(StaticGrants(()), cwd=here),
            sandbox=None,
            workspace=here,
            limits=DEFAULT_LIMITS,
            may_write=mode is not CollaborationMode.PLAN,
        )
    mcp = AgentTools(specs, context=context, mode=mode, before_call=before_call)
    return McpAndBuiltinTools(builtin, mcp)
