"""What ``run_shell`` costs per call beyond the command's own work, in each sandbox.

Each measure runs ``true`` (a command with next to no work of its own) ``calls`` times in a
row; the repeats are interleaved (local, bubblewrap, docker, exec_run, local, ...) so drift
on a shared, noisy machine hits every measure alike, and the median per-call time is
reported (and the 90th percentile of the single calls):

* **local**: ``LocalSandbox.run_shell`` without bubblewrap (a process group, a scrubbed
  environment, the output pipe);
* **local + bubblewrap**: the same inside bubblewrap (read-only root, no network, own pids):
  a statement written to the agent's long-lived bubblewrap's shell, which runs the command
  and kills whatever it left behind;
* **docker, session shell**: ``DockerSandbox.run_shell``: one statement written to the
  container's long-lived shell and its output read back;
* **docker, fresh exec_run**: the docker SDK's ``exec_run`` of ``true`` in the same
  container, for comparison: what a call would cost without the session.

Targets: local ≤ 10 ms, local + bubblewrap ≤ 10 ms (issue 24: it was 22.6 ms, shown as
"before"), docker (session) ≤ 25 ms. A sandbox this machine cannot run
(no bubblewrap, no engine or image) is reported as unavailable, with the reason, and is not
judged. Prints a table and writes JSON (machine, parameters, figures).

    .venv/bin/python -m conclave.benchmarks.sandbox_bench [--calls N] [--repeats R] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from conclave.actors.sandbox import SandboxUnavailable, open_sandbox
from conclave.actors.sandbox.docker import DockerSandbox
from conclave.actors.sandbox.local import LocalSandbox, bubblewrap
from conclave.benchmarks.bench_args import measure_and_report, positive_int
from conclave.benchmarks.machine import machine_info
from conclave.config.schema.sandbox import SandboxConfig, SandboxKind

__all__ = ["main", "run_benchmark"]

LOCAL = "local"
BUBBLEWRAP = "local + bubblewrap"
DOCKER = "docker, session shell"
EXEC_RUN = "docker, fresh exec_run"
MEASURES = (LOCAL, BUBBLEWRAP, DOCKER, EXEC_RUN)
TARGETS_MS = {LOCAL: 10.0, BUBBLEWRAP: 10.0, DOCKER: 25.0}
BEFORE_MS = {BUBBLEWRAP: 22.6}
"""What issue 24 measured before the limits moved from ``prlimit`` into the shell."""

Step = Callable[[], Awaitable[object]]


async def _measures(
    workspace: Path, stack: contextlib.AsyncExitStack
) -> tuple[dict[str, Step], dict[str, str]]:
    """A step per measure this machine can run, and why each other one cannot."""
    steps: dict[str, Step] = {}
    unavailable: dict[str, str] = {}
    plain = LocalSandbox(
        workspace=workspace, mounts=(), config=SandboxConfig(), use_bubblewrap=False
    )
    steps[LOCAL] = lambda: plain.run_shell("true", cwd=workspace, timeout=30)
    if bubblewrap() is None:
        unavailable[BUBBLEWRAP] = "bubblewrap is not installed or does not work here"
    else:
        confined = LocalSandbox(workspace=workspace, mounts=(), config=SandboxConfig())
        steps[BUBBLEWRAP] = lambda: confined.run_shell("true", cwd=workspace, timeout=30)
    try:
        sandbox = await stack.enter_async_context(
            open_sandbox(
                SandboxConfig(type=SandboxKind.DOCKER),
                run_id="sandbox-bench",
                agent="bench",
                workspace=workspace,
                mounts=(),
            )
        )
    except SandboxUnavailable as exc:
        unavailable[DOCKER] = unavailable[EXEC_RUN] = str(exc)
        return steps, unavailable
    assert isinstance(sandbox, DockerSandbox)
    container = sandbox.container
    assert container is not None
    steps[DOCKER] = lambda: sandbox.run_shell("true", cwd=workspace, timeout=30)

    async def exec_run() -> object:
        # Called directly, not through a thread: the SDK call's own cost, a lower bound.
        return container.exec_run(["true"])

    steps[EXEC_RUN] = exec_run
    return steps, unavailable


async def _measure(
    calls: int, repeats: int, progress: Callable[[str], object]
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    """Per measure: each repeat's mean ms per call, and every call's own ms."""
    per_call: dict[str, list[float]] = {}
    each_call: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="conclave-sandbox-bench-") as tmp:
        async with contextlib.AsyncExitStack() as stack:
            workspace = Path(await trio.Path(tmp).resolve())
            steps, unavailable = await _measures(workspace, stack)
            for step in steps.values():
                await step()  # warm up: the first call opens sessions, loads binaries
            for repeat in range(repeats):
                for name, step in steps.items():
                    times = each_call.setdefault(name, [])
                    started = time.perf_counter()
                    for _ in range(calls):
                        begun = time.perf_counter()
                        await step()
                        times.append((time.perf_counter() - begun) * 1000)
                    elapsed = time.perf_counter() - started
                    per_call.setdefault(name, []).append(elapsed / calls * 1000)
                progress(f"repeat {repeat + 1}/{repeats} done")
    return per_call, each_call, unavailable


def _p90(values: Sequence[float]) -> float:
    """The 90th percentile, nearest rank (defined for a single value too)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def run_benchmark(
    calls: int = 200, repeats: int = 5, progress: Callable[[str], object] = lambda _: None
) -> dict[str, Any]:
    per_call, each_call, unavailable = trio.run(_measure, calls, repeats, progress)
    rows: list[dict[str, Any]] = []
    for name in MEASURES:
        if name in unavailable:
            rows.append({"measure": name, "available": False, "reason": unavailable[name]})
            continue
        times = per_call[name]
        rows.append(
            {
                "measure": name,
                "available": True,
                "median_ms": round(statistics.median(times), 4),
                "best_ms": round(min(times), 4),
                "worst_ms": round(max(times), 4),
                "p90_call_ms": round(_p90(each_call[name]), 4),
                "target_ms": TARGETS_MS.get(name),
                "before_ms": BEFORE_MS.get(name),
            }
        )
    judged = [r for r in rows if r["available"] and r["target_ms"] is not None]
    return {
        "benchmark": "sandbox_bench",
        "machine": machine_info(),
        "parameters": {"calls": calls, "repeats": repeats, "command": "true"},
        "rows": rows,
        "target": "local and local + bubblewrap <= 10 ms, docker (session shell) <= 25 ms per call",
        "met": all(r["median_ms"] <= r["target_ms"] for r in judged),
    }


def format_table(report: dict[str, Any]) -> str:
    header = ("measure", "median ms/call", "best", "worst", "p90 call", "before", "target")
    rows = [
        (
            r["measure"],
            f"{r['median_ms']:.3f}",
            f"{r['best_ms']:.3f}",
            f"{r['worst_ms']:.3f}",
            f"{r['p90_call_ms']:.3f}",
            "-" if r["before_ms"] is None else f"{r['before_ms']:g}",
            "-" if r["target_ms"] is None else f"<= {r['target_ms']:g}",
        )
        if r["available"]
        else (r["measure"], "unavailable", "", "", "", "", "")
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
        f"sandbox_bench: run_shell('true') per call, median of {params['repeats']} repeats "
        f"of {params['calls']:,} calls"
    )
    notes = [
        f"{r['measure']}: unavailable: {r['reason']}" for r in report["rows"] if not r["available"]
    ]
    verdict = f"targets ({report['target']}): {'met' if report['met'] else 'NOT met'}"
    return "\n".join([title, *lines, *notes, verdict])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.sandbox_bench",
        description="What run_shell costs per call in each sandbox (local, bubblewrap, docker).",
    )
    p.add_argument("--calls", type=positive_int, default=200, metavar="N")
    p.add_argument("--repeats", type=positive_int, default=5, metavar="R")
    p.add_argument("--json", default="bench-results/sandbox_bench.json", metavar="PATH")
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
