"""What a tool call costs beyond the tool's own work: the executor and the path policy.

Measured per call, in one ``trio.run``, as the median of interleaved repeats:

* **executor, no-op tool**: ``AgentTools.execute`` on a tool that does nothing: parsing and
  checking the arguments, the mode check, timing, capping the output;
* **path policy, read / write**: ``PathPolicy.for_read`` / ``for_write`` on a relative path
  two directories deep (``realpath`` and the grant checks);
* **verified open, extra**: opening a file through :func:`actors.tools.fs.open_file`
  (``O_NOFOLLOW``, then ``/proc/self/fd``) minus a plain ``os.open``;
* **read_file, end to end** and **plain read**: the real tool on a 20-line file, and the
  same file read and numbered directly: their difference is everything the tool adds,
  its own line-by-line reading and capping included (a small file is read inline, with
  no worker-thread hop).

The target: executor + path policy (read) + verified open extra ≤ 0.5 ms per call.
Prints a table and writes JSON (machine, parameters, figures).

    .venv/bin/python -m conclave.benchmarks.tools_bench [--calls N] [--repeats R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.tools import fs
from conclave.actors.tools.executor import AgentTools, agent_tools
from conclave.actors.tools.paths import PathGrant, PathPolicy, StaticGrants
from conclave.actors.tools.protocol import ToolResult
from conclave.actors.tools.spec import ToolContext, ToolSpec
from conclave.benchmarks.bench_args import measure_and_report, positive_int
from conclave.benchmarks.machine import machine_info
from conclave.config.modes import CollaborationMode

__all__ = ["main", "run_benchmark"]

TARGET_MS = 0.5
FILE = "src/pkg/module.py"
LINES = 20

Step = Callable[[], Awaitable[object]]


async def _noop(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    return ToolResult(ok=True, output="ok")


NOOP = ToolSpec(
    name="noop",
    description="does nothing",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "offset": {"type": "integer", "minimum": 1},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    read_only=True,
    run=_noop,
)


def _workspace(root: Path) -> Path:
    workspace = root / "workspace"
    target = workspace / FILE
    target.parent.mkdir(parents=True)
    target.write_text("".join(f"line {i} of the module\n" for i in range(LINES)))
    return Path(os.path.realpath(workspace))


def _plain_read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY)
    with open(fd, "rb") as file:
        data = file.read()
    lines = data.decode().splitlines()
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))


def _steps(workspace: Path) -> dict[str, Step]:
    policy = PathPolicy(
        StaticGrants((PathGrant(root=workspace, writable=True, label="workspace"),)),
        cwd=workspace,
    )
    tools = agent_tools(
        agent="bench",
        mode=CollaborationMode.DEFAULT,
        policy=policy,
        sandbox=None,
        workspace=workspace,
    )
    noop = AgentTools([NOOP], context=tools.context, mode=CollaborationMode.DEFAULT)
    noop_call = ToolCall(id="c", name="noop", arguments=json.dumps({"path": FILE, "offset": 1}))
    read_call = ToolCall(id="c", name="read_file", arguments=json.dumps({"path": FILE}))
    target = workspace / FILE

    async def executor() -> object:
        return await noop.execute(noop_call)

    async def for_read() -> object:
        return policy.for_read(FILE)

    async def for_write() -> object:
        return policy.for_write(FILE)

    async def verified_open() -> object:
        os.close(fs.open_file(target))
        return None

    async def plain_open() -> object:
        os.close(os.open(target, os.O_RDONLY | os.O_CLOEXEC))
        return None

    async def read_file() -> object:
        result = await tools.execute(read_call)
        assert result.ok, result.error
        return result

    async def plain_read() -> object:
        return _plain_read(target)

    return {
        "executor, no-op tool": executor,
        "path policy, read": for_read,
        "path policy, write": for_write,
        "verified open": verified_open,
        "plain open": plain_open,
        "read_file, end to end": read_file,
        "plain read": plain_read,
    }


async def _per_call_ms(step: Step, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await step()
    return (time.perf_counter() - started) / calls * 1000


def run_benchmark(
    calls: int, repeats: int, *, progress: Callable[[str], None] = lambda line: None
) -> dict[str, Any]:
    async def go(workspace: Path) -> dict[str, list[float]]:
        steps = _steps(workspace)
        for step in steps.values():  # warm up: imports, caches, the thread pool
            await _per_call_ms(step, max(1, calls // 10))
        samples: dict[str, list[float]] = {name: [] for name in steps}
        names = list(steps)
        for repeat in range(repeats):
            # Interleaved, in a rotating order, so drift on a shared machine hits every row.
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(await _per_call_ms(steps[name], calls))
            progress(f"repeat {repeat + 1}/{repeats} done")
        return samples

    with tempfile.TemporaryDirectory(prefix="tools-bench-") as scratch:
        samples = trio.run(go, _workspace(Path(scratch)))
    median = {name: statistics.median(values) for name, values in samples.items()}
    rows = [
        {
            "measure": name,
            "median_ms": round(median[name], 4),
            "best_ms": round(min(values), 4),
            "worst_ms": round(max(values), 4),
        }
        for name, values in samples.items()
    ]
    open_extra = max(0.0, median["verified open"] - median["plain open"])
    overhead = median["executor, no-op tool"] + median["path policy, read"] + open_extra
    end_to_end_extra = median["read_file, end to end"] - median["plain read"]
    return {
        "benchmark": "tools_bench",
        "machine": machine_info(),
        "parameters": {"calls": calls, "repeats": repeats, "file_lines": LINES, "path": FILE},
        "rows": rows,
        "verified_open_extra_ms": round(open_extra, 4),
        "overhead_ms": round(overhead, 4),
        "read_file_extra_ms": round(end_to_end_extra, 4),
        "target": f"executor + path policy <= {TARGET_MS} ms per call",
        "met": overhead <= TARGET_MS,
    }


def format_table(report: dict[str, Any]) -> str:
    header = ("measure", "median ms/call", "best", "worst")
    rows = [
        (r["measure"], f"{r['median_ms']:.4f}", f"{r['best_ms']:.4f}", f"{r['worst_ms']:.4f}")
        for r in report["rows"]
    ]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(
            str(cell).ljust(w) if i == 0 else str(cell).rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    params = report["parameters"]
    title = (
        f"tools_bench: per-call cost, median of {params['repeats']} repeats of "
        f"{params['calls']:,} calls"
    )
    summary = [
        f"verified open, extra over a plain open: {report['verified_open_extra_ms']:.4f} ms",
        f"read_file end to end minus plain read (all the tool adds): "
        f"{report['read_file_extra_ms']:.4f} ms",
        f"executor + path policy + verified open: {report['overhead_ms']:.4f} ms "
        f"(target {report['target']}): {'met' if report['met'] else 'NOT met'}",
    ]
    return "\n".join([title, *lines, *summary])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.tools_bench",
        description="What a tool call costs beyond the tool's own work (executor, path policy).",
    )
    p.add_argument("--calls", type=positive_int, default=2_000, metavar="N")
    p.add_argument("--repeats", type=positive_int, default=7, metavar="R")
    p.add_argument("--json", default="bench-results/tools_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return measure_and_report(
        args.json,
        lambda: run_benchmark(args.calls, args.repeats, progress=print),
        format_table,
        met=lambda report: bool(report["met"]),
    )


if __name__ == "__main__":
    raise SystemExit(main())
