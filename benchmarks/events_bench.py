"""What watching a run costs the run: a subscriber that never reads must cost nothing.

One scripted run of N agents (latency 0, ring visibility, refinement off: every agent
answers once and votes once, so the run is all runtime work and no waiting), measured
three ways in interleaved repeats, each in a fresh ``trio.run``:

* **no hub**: ``open_run(spec)``, the run alone;
* **hub, no subscriber**: ``open_run(spec, taps=[hub])``, the hub offered every event but
  plain deliveries (bound, it declines them while no subscriber asks);
* **hub, 1 stuck subscriber**: the same with one channel subscriber (default buffer) that
  never reads: it fills its buffer, is dropped, and must not slow the run.

The target: the stuck subscriber's run takes the same time as the hub without subscribers,
±10 % (median of the repeats). The run never waits (latency 0, no event log, so the hub's
cost is not hidden behind the disk's): its time is CPU time, which is what the verdict
compares; wall time, which other processes on a shared machine inflate, is shown beside it.
Prints a table and writes JSON (machine, parameters, figures).

    .venv/bin/python -m conclave.benchmarks.events_bench [--agents N] [--repeats R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from conclave.actors.events import DEFAULT_BUFFER, EventHub, Subscription
from conclave.actors.run.driver import RunSpec, open_run
from conclave.benchmarks.bench_args import positive_int
from conclave.benchmarks.machine import machine_info
from conclave.config.modes import ModeState, apply_modes
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["main"]

TOLERANCE = 0.10
"""The stuck subscriber's run may differ from the unwatched hub's by this fraction."""
TASK = "Propose a plan to cut the build time of a large monorepo in half."
SETUPS = ("no hub", "hub, no subscriber", "hub, 1 stuck subscriber")


def spec(agents: int) -> RunSpec:
    members = tuple(
        AgentConfig(id=f"a{i:05d}", backend=ScriptedBackendConfig(seed=i, latency=0.0))
        for i in range(agents)
    )
    config = ConclaveConfig(
        agents=members, orchestrator=OrchestratorConfig(visibility="ring", quiet_period=None)
    )
    return RunSpec(task=TASK, config=apply_modes(config, ModeState(refinement=False)))


def measure(run_spec: RunSpec, setup: str, buffer: int = DEFAULT_BUFFER) -> dict[str, Any]:
    """One run in a fresh ``trio.run``: its wall time and what the hub saw."""
    hub: EventHub | None = None if setup == "no hub" else EventHub()
    stuck: list[Subscription[Any]] = []

    async def go() -> str:
        taps = [] if hub is None else [hub]
        if hub is not None and setup == "hub, 1 stuck subscriber":
            stuck.append(hub.subscribe(buffer=buffer))
        async with open_run(run_spec, taps=taps) as handle:
            if hub is not None:
                hub.bind(handle.system.record, on_hearing_changed=handle.system.refresh_taps)
            result = await handle.result()
        return str(result.termination)

    started, cpu_started = time.perf_counter(), time.process_time()
    termination = trio.run(go)
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - started
    row: dict[str, Any] = {"wall_s": wall, "cpu_s": cpu, "termination": termination}
    if hub is not None:
        stats = hub.statistics()
        row.update(events=stats.recorded, delivered=stats.delivered, dropped=stats.dropped)
    if stuck:
        row["stuck_dropped"] = stuck[0].dropped is not None
    return row


def run_benchmark(
    agents: int,
    repeats: int,
    *,
    buffer: int = DEFAULT_BUFFER,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    run_spec = spec(agents)
    measure(run_spec, "hub, no subscriber")  # warm up: imports, caches, the allocator
    samples: dict[str, list[dict[str, Any]]] = {setup: [] for setup in SETUPS}
    for repeat in range(repeats):
        # Interleaved, in a rotating order, so drift on a shared machine hits every setup.
        order = SETUPS[repeat % 3 :] + SETUPS[: repeat % 3]
        for setup in order:
            samples[setup].append(measure(run_spec, setup, buffer))
        progress(f"repeat {repeat + 1}/{repeats} done")
    rows = []
    for setup in SETUPS:
        cpus = [s["cpu_s"] for s in samples[setup]]
        last = samples[setup][-1]
        rows.append(
            {
                "setup": setup,
                "cpu_median_s": round(statistics.median(cpus), 3),
                "cpu_best_s": round(min(cpus), 3),
                "cpu_worst_s": round(max(cpus), 3),
                "wall_median_s": round(statistics.median(s["wall_s"] for s in samples[setup]), 3),
                "events": last.get("events"),
                "delivered": last.get("delivered"),
                "dropped": last.get("dropped"),
                "all_completed": all(s["termination"] == "completed" for s in samples[setup]),
            }
        )
    baseline, stuck = rows[1]["cpu_median_s"], rows[2]["cpu_median_s"]
    ratio = stuck / baseline
    return {
        "benchmark": "events_bench",
        "machine": machine_info(),
        "parameters": {
            "agents": agents,
            "repeats": repeats,
            "latency_s": 0.0,
            "visibility": "ring",
            "refinement": False,
            "event_log": False,
            "subscriber_buffer": buffer,
        },
        "rows": rows,
        "stuck_vs_unwatched": round(ratio, 3),
        "target": f"within ±{TOLERANCE:.0%}",
        "met": abs(ratio - 1) <= TOLERANCE
        and all(s["stuck_dropped"] for s in samples["hub, 1 stuck subscriber"]),
    }


def format_table(report: dict[str, Any]) -> str:
    header = (
        "setup",
        "CPU median s",
        "CPU best s",
        "CPU worst s",
        "wall median s",
        "events",
        "delivered",
        "dropped",
    )
    rows = [
        (
            r["setup"],
            f"{r['cpu_median_s']:.3f}",
            f"{r['cpu_best_s']:.3f}",
            f"{r['cpu_worst_s']:.3f}",
            f"{r['wall_median_s']:.3f}",
            "-" if r["events"] is None else f"{r['events']:,}",
            "-" if r["delivered"] is None else f"{r['delivered']:,}",
            "-" if r["dropped"] is None else str(r["dropped"]),
        )
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
        f"events_bench: one run of {params['agents']:,} scripted agents (latency 0, ring, "
        f"refinement off, no log), median of {params['repeats']}"
    )
    verdict = (
        f"stuck subscriber / no subscriber, CPU medians: {report['stuck_vs_unwatched']:.3f} "
        f"(target {report['target']}): {'met' if report['met'] else 'NOT met'}"
    )
    return "\n".join([title, *lines, verdict])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.events_bench",
        description="What a subscriber that never reads costs a run (it must cost nothing).",
    )
    p.add_argument("--agents", type=positive_int, default=1_000, metavar="N")
    p.add_argument("--repeats", type=positive_int, default=7, metavar="R")
    p.add_argument("--json", default="bench-results/events_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_gc_for_actors()  # as the conclave command does
    report = run_benchmark(args.agents, args.repeats, progress=print)
    print(format_table(report))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return 0 if report["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
