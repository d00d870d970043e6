"""Runs one after another in one process: what the cycle collector costs them.

A process that runs many runs (``conclave serve``, a batch, the REPL) must free each run when
it ends. What a run leaves in reference cycles only the collector frees, and in a full pass:
issue 24 measured every ~11th run of 1,000 scripted agents taking 2.5-3.0 s of CPU instead of
1.3-1.5 s, a full collection freeing 200,000-350,000 objects of ended runs.

Two phases in one process, with the collector tuned as the ``conclave`` command tunes it
(:func:`~runtime.gc_tuning.tune_gc_for_actors`), each run of ``--agents`` scripted agents
(ring, 200 ms ±50 % per call, refinement on, its event log written), one after another in
one ``trio.run`` on a virtual clock, so what is measured is CPU, not waiting:

* **steady**: ``--runs`` runs with automatic collection; each run's CPU, and the collector's
  passes during it (their CPU, and the objects they freed);
* **left in cycles**: ``--probes`` more runs, each followed by an explicit ``gc.collect()``
  (with automatic collection off during the run): what the run left for the collector.

    .venv/bin/python -m conclave.benchmarks.gc_bench [--runs 20] [--agents 1000] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio
import trio.testing

from conclave.actors.run.driver import RunSpec, run
from conclave.benchmarks.bench_args import measure_and_report, positive_int
from conclave.benchmarks.load_bench import TASK, Case
from conclave.benchmarks.machine import machine_info
from conclave.config.schema import ConclaveConfig
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["GcPasses", "left_in_cycles", "main", "run_benchmark"]

LATENCY = 0.2


class GcPasses:
    """The collector's passes while installed: their CPU and the objects they freed."""

    def __init__(self) -> None:
        self.passes = 0
        self.full_passes = 0
        self.cpu_s = 0.0
        self.collected = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
            return
        self.passes += 1
        self.full_passes += info["generation"] == 2
        self.cpu_s += time.process_time() - self._started
        self.collected += info["collected"]

    def __enter__(self) -> GcPasses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _config(agents: int) -> ConclaveConfig:
    return Case(agents=agents, latency=LATENCY, visibility="ring").config()


async def _one_run(config: ConclaveConfig, scratch: Path, number: int) -> str:
    """One run with its event log; its termination."""
    try:
        spec = RunSpec(task=TASK, config=config, log_dir=scratch / f"run{number}")
        return (await run(spec)).termination.value
    finally:
        shutil.rmtree(scratch / f"run{number}", ignore_errors=True)


async def steady_runs(config: ConclaveConfig, runs: int, scratch: Path) -> list[dict[str, Any]]:
    """``runs`` runs with automatic collection: each one's CPU and the collector's share."""
    rows = []
    for number in range(runs):
        with GcPasses() as passes:
            started = time.process_time()
            termination = await _one_run(config, scratch, number)
            cpu = time.process_time() - started
        rows.append(
            {
                "run": number,
                "termination": termination,
                "cpu_s": round(cpu, 3),
                "gc_passes": passes.passes,
                "gc_full_passes": passes.full_passes,
                "gc_cpu_s": round(passes.cpu_s, 3),
                "gc_collected": passes.collected,
            }
        )
    return rows


async def left_in_cycles(config: ConclaveConfig, probes: int, scratch: Path) -> list[int]:
    """What ``gc.collect()`` frees after each of ``probes`` runs (the collector off during
    them, so nothing was freed before)."""
    found = []
    enabled = gc.isenabled()
    gc.collect()
    try:
        for number in range(probes):
            gc.disable()
            await _one_run(config, scratch, number)
            found.append(gc.collect())
    finally:
        if enabled:
            gc.enable()
    return found


def run_benchmark(
    agents: int, runs: int, probes: int, *, progress: Callable[[str], object] = print
) -> dict[str, Any]:
    config = _config(agents)
    scratch = Path(tempfile.mkdtemp(prefix="conclave-gc-bench-"))
    clock = trio.testing.MockClock(autojump_threshold=0)
    try:
        rows = trio.run(steady_runs, config, runs, scratch, clock=clock)
        for row in rows:
            progress(
                f"run {row['run']:3d}: {row['cpu_s']:.2f} s CPU, collector "
                f"{row['gc_cpu_s']:.2f} s in {row['gc_passes']} passes "
                f"({row['gc_full_passes']} full), {row['gc_collected']} objects freed"
            )
        found = trio.run(left_in_cycles, config, probes, scratch, clock=clock)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cpu = [row["cpu_s"] for row in rows]
    return {
        "machine": machine_info(),
        "parameters": {"agents": agents, "runs": runs, "probes": probes, "latency": LATENCY},
        "runs": rows,
        "cpu_per_run_median_s": round(statistics.median(cpu), 3),
        "cpu_per_run_max_s": round(max(cpu), 3),
        "gc_cpu_s": round(sum(row["gc_cpu_s"] for row in rows), 3),
        "gc_collected": sum(row["gc_collected"] for row in rows),
        "left_in_cycles_per_run": found,
    }


def format_summary(report: dict[str, Any]) -> str:
    p = report["parameters"]
    return "\n".join(
        [
            f"{p['runs']} runs of {p['agents']} agents, one process:",
            f"  CPU per run: median {report['cpu_per_run_median_s']:.2f} s, "
            f"max {report['cpu_per_run_max_s']:.2f} s",
            f"  collector: {report['gc_cpu_s']:.2f} s of CPU, "
            f"{report['gc_collected']} objects freed",
            f"  left in cycles after each run: {report['left_in_cycles_per_run']}",
        ]
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--agents", type=positive_int, default=1_000)
    p.add_argument("--runs", type=positive_int, default=20, help="runs of the steady phase")
    p.add_argument("--probes", type=positive_int, default=3, help="runs each followed by a pass")
    p.add_argument("--json", default="bench-results/gc_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_gc_for_actors()  # as the conclave command does
    return measure_and_report(
        args.json,
        lambda: run_benchmark(args.agents, args.runs, args.probes, progress=print),
        format_summary,
    )


if __name__ == "__main__":
    raise SystemExit(main())
