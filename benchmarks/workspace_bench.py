"""Agents that work on files, at scale: one coordinated run of N scripted agents (50 by
default) that each read 3 files and write 1 in their own workspace before they answer.

Each agent's workspace is seeded with three files; its scripted backend's ``tool_steps``
make it call ``read_file`` three times and ``write_file`` once, then ``new_answer``; then
it votes, and the winner presents. Everything the issue asks of tools runs for real: the
workspaces, the path policy, the local sandbox each agent gets (bubblewrap where present),
the staging copy of each workspace before its answer and the published snapshots, the
``final/`` copy. LLM latency is scripted (200 ms ±50 % by default).

Reported, for the median run of ``--repeats`` by wall time: LLM calls started and
completed, tool calls by tool (and how many failed), the files each agent wrote (checked
on disk afterwards), wall time, and the *ideal*. The ideal is computed as
``benchmarks/load_bench.py`` computes it: the same run (same agents, seeds, latencies,
tools) on trio's virtual clock (MockClock with autojump), where every piece of runtime work,
file I/O and worker-thread hop included, takes zero time, so its duration is exactly the
critical path of the LLM latencies the run had to wait for. The same config without tools
is run on the virtual clock too, as a reference: the gap between the two ideals is what
four more LLM steps per answer cost in latency alone, and wall/ideal is what the runtime
and the tools add on top.

    .venv/bin/python -m conclave.benchmarks.workspace_bench [--agents N] [--latency S] [--repeats R]
        [--json PATH] [--log-root DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing

from conclave.actors.events.loop import ToolCallFinished
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import RunResult
from conclave.actors.sandbox.local import bubblewrap
from conclave.benchmarks.bench_args import (
    check_log_root,
    check_report_path,
    positive_int,
    write_report,
)
from conclave.benchmarks.load_bench import TASK, Case
from conclave.benchmarks.machine import current_rss_kb, machine_info, peak_rss_kb
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from conclave.config.schema.backends import ToolStep
from conclave.runtime import Event
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["main", "run_benchmark"]

INPUTS = ("spec.md", "notes.md", "data.csv")
"""The three files seeded in every workspace, read in this order."""
OUTPUT = "summary.md"
"""The file every agent writes."""
LINES = 40
"""Lines in each seeded file."""
LOG_ROOT = Path(".conclave") / "bench"
TOOL_STEPS = (
    *(ToolStep(tool="read_file", arguments={"path": name}) for name in INPUTS),
    ToolStep(
        tool="write_file",
        arguments={"path": OUTPUT, "content": "summary by {agent}, answer {revision}\n"},
    ),
)


def config_for(agents: int, latency: float, *, tools: bool, seed: int = 0) -> ConclaveConfig:
    """The load benchmark's big-run config for ``agents`` (all-to-all, refinement on), with
    the file work added when ``tools``: the agents' tool steps and ``orchestrator.tools``."""
    config = Case(agents=agents, latency=latency, seed=seed).config()
    if not tools:
        return config
    members: list[AgentConfig] = []
    for agent in config.agents:
        assert isinstance(agent.backend, ScriptedBackendConfig)
        backend = attrs.evolve(agent.backend, tool_steps=TOOL_STEPS)
        members.append(attrs.evolve(agent, backend=backend))
    return attrs.evolve(
        config,
        agents=tuple(members),
        orchestrator=attrs.evolve(config.orchestrator, tools=True),
    )


def seed_workspaces(workdir: Path, config: ConclaveConfig) -> None:
    """Give every agent's workspace its three input files (a reused workspace is kept by the
    run, so they are there when the agents start)."""
    for agent in config.agents:
        workspace = workdir / "workspaces" / agent.id
        workspace.mkdir(parents=True)
        for name in INPUTS:
            text = "".join(
                f"{name} line {i}: what {agent.id} needs to know\n" for i in range(LINES)
            )
            (workspace / name).write_text(text)


class ToolTally:
    """A tap counting finished tool calls by tool, and the failed ones."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.failed = 0

    def record(self, event: Event) -> None:
        if isinstance(event, ToolCallFinished):
            self.calls[event.tool] += 1
            self.failed += not event.ok


def _outputs_written(workdir: Path, config: ConclaveConfig) -> int:
    """Agents whose workspace holds the file they were scripted to write."""
    return sum(
        (workdir / "workspaces" / a.id / OUTPUT).read_text().startswith(f"summary by {a.id},")
        for a in config.agents
        if (workdir / "workspaces" / a.id / OUTPUT).is_file()
    )


def _snapshots(workdir: Path) -> int:
    return sum(1 for p in (workdir / "snapshots").iterdir() if not p.name.startswith("."))


@attrs.frozen(kw_only=True)
class Measured:
    wall: float
    result: RunResult
    tally: ToolTally
    outputs: int
    snapshots: int


def _measure_once(config: ConclaveConfig, scratch: Path) -> Measured:
    log_dir = scratch / "run"
    seed_workspaces(log_dir, config)  # the log dir is the run's working directory
    tally = ToolTally()
    spec = RunSpec(task=TASK, config=config, log_dir=log_dir)
    started = time.perf_counter()
    result = trio.run(lambda: run(spec, taps=[tally]))
    wall = time.perf_counter() - started
    return Measured(
        wall=wall,
        result=result,
        tally=tally,
        outputs=_outputs_written(log_dir, config),
        snapshots=_snapshots(log_dir),
    )


def _virtual(config: ConclaveConfig, scratch: Path) -> tuple[RunResult, float, ToolTally]:
    """The run on a virtual clock (see the module docstring): result, duration, tool calls."""
    tally = ToolTally()
    workdir = scratch / "virtual"
    if config.orchestrator.tools:
        seed_workspaces(workdir, config)

    async def go() -> tuple[RunResult, float]:
        start = trio.current_time()
        result = await run(RunSpec(task=TASK, config=config, workdir=workdir), taps=[tally])
        return result, trio.current_time() - start

    result, duration = trio.run(go, clock=trio.testing.MockClock(autojump_threshold=0))
    return result, duration, tally


def run_benchmark(
    agents: int,
    latency: float,
    repeats: int,
    *,
    log_root: Path = LOG_ROOT,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Measure ``repeats`` real runs and the two virtual ones; the report's figures are the
    median run's (by wall time), with the range of wall/ideal over all repeats."""
    config = config_for(agents, latency, tools=True)
    baseline = current_rss_kb()
    measured: list[Measured] = []
    log_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=log_root, prefix="workspace-bench-") as tmp:
        for repeat in range(repeats):
            scratch = Path(tmp) / f"repeat{repeat}"
            measured.append(_measure_once(config, scratch))
            progress(f"run {repeat + 1}/{repeats}: {measured[-1].wall:.2f} s")
        peak = peak_rss_kb()
        ideal_result, ideal, ideal_tally = _virtual(config, Path(tmp))
        talk_result, talk_ideal, _ = _virtual(config_for(agents, latency, tools=False), Path(tmp))
    progress(f"ideal (virtual clock): {ideal:.2f} s; without tools: {talk_ideal:.2f} s")
    measured.sort(key=lambda m: m.wall)
    median = measured[len(measured) // 2]
    result = median.result
    ratios = [m.wall / ideal for m in measured] if ideal else []
    tools = median.tally
    return {
        "benchmark": "workspace_bench",
        "machine": machine_info(),
        "parameters": {
            "agents": agents,
            "latency_s": latency,
            "jitter": 0.5 if latency else 0.0,
            "repeats": repeats,
            "tool_steps": [f"{s.tool} {s.arguments['path']}" for s in TOOL_STEPS],
            "sandbox": "local (bubblewrap)" if bubblewrap() else "local (no bubblewrap)",
        },
        "termination": result.termination.value,
        "llm_started": result.llm_calls,
        "llm_completed": result.llm_completed,
        "answers": len(result.answers),
        "tool_calls": dict(sorted(tools.calls.items())),
        "tool_calls_failed": tools.failed,
        "outputs_written": median.outputs,
        "snapshots": median.snapshots,
        "wall_s": round(median.wall, 3),
        "ideal_s": round(ideal, 3),
        "wall_over_ideal": round(median.wall / ideal, 2) if ideal else None,
        "ratio_range": f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else None,
        "ideal_llm_started": ideal_result.llm_calls,
        "ideal_tool_calls": dict(sorted(ideal_tally.calls.items())),
        "talk_only_ideal_s": round(talk_ideal, 3),
        "talk_only_llm_started": talk_result.llm_calls,
        "peak_rss_mb": round(peak / 1024, 1),
        "rss_per_agent_kb": round((peak - baseline) / agents, 1),
    }


def format_table(report: dict[str, Any]) -> str:
    p = report["parameters"]
    calls = report["tool_calls"]
    ideal_calls = report["ideal_tool_calls"]
    rows = [
        ("LLM calls started", report["llm_started"], report["ideal_llm_started"]),
        ("LLM calls completed", report["llm_completed"], ""),
        ("read_file calls", calls.get("read_file", 0), ideal_calls.get("read_file", 0)),
        ("write_file calls", calls.get("write_file", 0), ideal_calls.get("write_file", 0)),
        ("tool calls failed", report["tool_calls_failed"], ""),
        ("answers (snapshots published)", f"{report['answers']} ({report['snapshots']})", ""),
        ("agents whose file was written", f"{report['outputs_written']}/{p['agents']}", ""),
        ("wall s", f"{report['wall_s']:.2f}", f"{report['ideal_s']:.2f}"),
        ("wall / ideal", report["wall_over_ideal"], ""),
        ("wall / ideal over repeats", report["ratio_range"] or "-", ""),
        ("peak RSS MB", report["peak_rss_mb"], ""),
        (
            "same run without tools: ideal s (LLM calls)",
            "",
            f"{report['talk_only_ideal_s']:.2f} ({report['talk_only_llm_started']})",
        ),
    ]
    header = ("measure", "measured (median run)", "ideal (virtual clock)")
    cells = [header, *((str(a), str(b), str(c)) for a, b, c in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    title = (
        f"workspace_bench: {p['agents']} scripted agents each read 3 files and write 1 in their "
        f"workspace; latency {p['latency_s'] * 1000:.0f} ms ±{p['jitter'] * 100:.0f} %, "
        f"{p['sandbox']}, median of {p['repeats']} run(s); termination {report['termination']}"
    )
    return "\n".join([title, *lines])


def _latency(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, such as 0.2; got {text!r}") from None
    if not 0 < value <= 60:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 60], got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.workspace_bench",
        description="A coordinated run of agents that read 3 files and write 1 each: LLM "
        "calls, tool calls, wall time against the ideal.",
    )
    p.add_argument("--agents", type=positive_int, default=50, metavar="N")
    p.add_argument("--latency", type=_latency, default=0.2, metavar="SECONDS")
    p.add_argument("--repeats", type=positive_int, default=3, metavar="R")
    p.add_argument("--json", default="bench-results/workspace_bench.json", metavar="PATH")
    p.add_argument(
        "--log-root",
        default=str(LOG_ROOT),
        metavar="DIR",
        help="where the runs' working directories and logs go while measured (deleted at the end)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for check, value in ((check_report_path, args.json), (check_log_root, args.log_root)):
        problem = check(value)
        if problem:
            print(f"workspace_bench: {problem}", file=sys.stderr)
            return 2
    tune_gc_for_actors()
    report = run_benchmark(
        args.agents, args.latency, args.repeats, log_root=Path(args.log_root), progress=print
    )
    print(format_table(report))
    out = Path(args.json)
    write_report(out, json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")
    complete = report["termination"] == "completed" and report["outputs_written"] == args.agents
    return 0 if complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
