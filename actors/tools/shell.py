"""``run_shell``: one command through the agent's sandbox, in its workspace.

The sandbox decides how the command is contained (see :mod:`actors.sandbox`); this tool
only refuses what must not run at all: any command in plan mode (a shell can write), and
any command when the sandbox says it cannot run safely here (``refusal()``). Cancellation is
the sandbox's to handle: it kills the command before the cancellation propagates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conclave.actors.tools.protocol import ToolMetadata, ToolResult
from conclave.actors.tools.spec import ToolContext, ToolSpec

__all__ = ["RUN_SHELL"]


async def _run_shell(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    ctx.require_write()
    sandbox = ctx.sandbox
    if sandbox is None:
        return ToolResult(
            ok=False,
            refused=True,
            error="no sandbox is configured for this agent, so no command can run",
        )
    refusal = sandbox.refusal()
    if refusal is not None:
        return ToolResult(ok=False, refused=True, error=f"run_shell cannot run here: {refusal}")
    limits = ctx.limits
    timeout = args.get("timeout", limits.shell_default_timeout)
    if timeout > limits.shell_max_timeout:
        return ToolResult(
            ok=False,
            refused=True,
            error=f"argument 'timeout': expected at most {limits.shell_max_timeout:g} seconds, "
            f"got {timeout:g}; split the work into shorter commands",
        )
    outcome = await sandbox.run_shell(args["command"], cwd=ctx.workspace, timeout=timeout)
    output = outcome.output if outcome.output else "(no output)"
    metadata = ToolMetadata(
        bytes=len(outcome.output.encode()),
        truncated_bytes=outcome.truncated_bytes,
        exit_code=outcome.exit_code,
    )
    if outcome.timed_out:
        return ToolResult(
            ok=False,
            error=f"the command was killed after {timeout:g}s (its timeout); output so far:\n"
            f"{output}",
            metadata=metadata,
        )
    if outcome.exit_code is None:
        return ToolResult(
            ok=False, error=f"the command was killed; output so far:\n{output}", metadata=metadata
        )
    if outcome.exit_code != 0:
        return ToolResult(
            ok=False,
            error=f"the command exited with code {outcome.exit_code}:\n{output}",
            metadata=metadata,
        )
    return ToolResult(ok=True, output=output, metadata=metadata)


RUN_SHELL = ToolSpec(
    name="run_shell",
    description=(
        "Run a shell command (sh -c) in your workspace and return its output (stdout and "
        "stderr together). Non-zero exit codes come back as errors with the output. "
        "No network unless the run allows it; prefer the file tools for reading and editing files."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command."},
            "timeout": {
                "type": "number",
                "minimum": 1,
                "description": "Seconds before the command is killed (default 120).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    run=_run_shell,
)
