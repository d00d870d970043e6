"""What an MCP tool call costs through Conclave, and how long MCP servers take to start.

Per call, the same work (echo a short message) three ways, each timed over N calls:

* **sdk**: ``client.call_tool("echo")`` straight on the SDK's client to the stdio
  ``@modelcontextprotocol/server-everything``: the server's own time, IPC included.
* **executor**: ``mcp__every__echo`` through the agent's tool executor (argument check,
  plan-mode gate, output cap, the server's state), on the same connection.
* **built-in**: an in-process echo tool through the same executor class: what the same work
  costs as a built-in tool.

The figure that matters is executor - sdk (what Conclave adds; target ≤ 2 ms). Start-up: the
time from spawning 3 stdio servers (filesystem, everything, time) to all three ready, as a
run does before its agents start: confined (bubblewrap, as a run starts them) and trusted
(``trust: true``, unconfined), to show what confinement costs. Prints a table and writes
JSON.

    .venv/bin/python -m conclave.benchmarks.mcp_bench [--calls N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.mcp.confine import NO_GRANTS, ServerGrants
from conclave.actors.mcp.server import spawn_listed
from conclave.actors.mcp.tools import with_mcp_tools
from conclave.actors.sandbox.protocol import Mount
from conclave.actors.tools.executor import AgentTools
from conclave.actors.tools.protocol import NO_TOOLS, ToolResult
from conclave.actors.tools.spec import ToolContext, ToolSpec
from conclave.config.modes import CollaborationMode
from conclave.config.schema.mcp import McpServerConfig, StdioMcpServer
from conclave.runtime import open_actor_system


def _program(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"mcp_bench: {name} is not installed (see .ci/run)")
    return found


async def _echo(_context: ToolContext, arguments: Mapping[str, Any]) -> ToolResult:
    return ToolResult(ok=True, output=f"Echo: {arguments['message']}")


async def _timed(n: int, call: Callable[[], Awaitable[object]]) -> list[float]:
    for _ in range(min(20, n)):
        await call()  # warm up
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return times


async def per_call(n: int) -> dict[str, dict[str, float]]:
    every = StdioMcpServer(name="every", command=_program("mcp-server-everything"))
    async with open_actor_system(name="bench") as system:
        servers = spawn_listed(system, [("every", every)], NO_GRANTS)
        await servers.settled()
        (state,) = servers.all()
        tools = with_mcp_tools(NO_TOOLS, [state], agent="a", mode=CollaborationMode.DEFAULT)
        client = (await state.connection(trio.current_time() + 10)).client
        mcp_call = ToolCall(id="c", name="mcp__every__echo", arguments='{"message": "hi"}')
        builtin = AgentTools(
            [
                ToolSpec(
                    name="echo",
                    description="echo",
                    parameters={
                        "type": "object",
                        "properties": {"message": {"type": "string"}},
                        "required": ["message"],
                    },
                    read_only=True,
                    run=_echo,
                )
            ],
            context=tools.mcp.context,  # type: ignore[attr-defined]
            mode=CollaborationMode.DEFAULT,
        )
        builtin_call = ToolCall(id="c", name="echo", arguments='{"message": "hi"}')
        results: dict[str, dict[str, float]] = {}
        for _ in range(3):  # interleaved repeats; the best median of each is kept
            for name, fn in (
                ("sdk", lambda: client.call_tool("echo", {"message": "hi"})),
                ("executor", lambda: tools.execute(mcp_call)),
                ("built-in", lambda: builtin.execute(builtin_call)),
            ):
                times = await _timed(n, fn)
                median = statistics.median(times) * 1000
                p95 = sorted(times)[int(len(times) * 0.95)] * 1000
                best = results.get(name)
                if best is None or median < best["median_ms"]:
                    results[name] = {"median_ms": median, "p95_ms": p95}
    return results


async def startup(trusted: bool) -> float:
    root = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    grants = ServerGrants(mounts=(Mount(path=root, writable=False),))
    configs: list[tuple[str, StdioMcpServer]] = [
        (
            "fs",
            StdioMcpServer(name="fs", command=_program("mcp-server-filesystem"), args=(str(root),)),
        ),
        ("every", StdioMcpServer(name="every", command=_program("mcp-server-everything"))),
        ("time", StdioMcpServer(name="time", command=_program("mcp-server-time"))),
    ]
    listed: list[tuple[str, McpServerConfig]] = [
        (key, attrs.evolve(config, trust=trusted)) for key, config in configs
    ]
    async with open_actor_system(name="bench") as system:
        start = time.perf_counter()
        servers = spawn_listed(system, listed, grants)
        await servers.settled()
        took = time.perf_counter() - start
        assert all(s.failure is None for s in servers.all())
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    calls = trio.run(per_call, args.calls)
    starts = [trio.run(startup, False) for _ in range(3)]
    trusted = [trio.run(startup, True) for _ in range(3)]
    overhead = calls["executor"]["median_ms"] - calls["sdk"]["median_ms"]
    print(f"{'path':<28} {'median ms':>10} {'p95 ms':>8}")
    for name, figures in calls.items():
        print(f"{name:<28} {figures['median_ms']:>10.3f} {figures['p95_ms']:>8.3f}")
    print(f"{'overhead (executor - sdk)':<28} {overhead:>10.3f}   (target <= 2 ms)")
    print(f"{'start 3 stdio servers (s)':<28} {min(starts):>10.3f}   (confined; best of 3)")
    print(f"{'  the same, trusted (s)':<28} {min(trusted):>10.3f}   (unconfined; best of 3)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {
                    "calls": args.calls,
                    "per_call": calls,
                    "overhead_ms": overhead,
                    "startup_3_stdio_s": starts,
                    "startup_3_stdio_trusted_s": trusted,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
