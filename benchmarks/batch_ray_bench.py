"""``conclave batch`` on local worker processes and on Ray, the same batch on both.

The batch is :mod:`benchmarks.batch_bench`'s (M runs of three scripted agents, 200 ms ±50 %
per call, an event log per run), run by a real ``conclave batch`` process at concurrency C:
once with ``--workers`` (one per core) and once with ``--engine ray`` on the local cluster
the command starts for itself (every core, a 100 MB object store, loopback only). Rates are
M over the first run's start to the last run's end; ``process_wall_s`` includes start-up
and shut-down (Ray's cluster and its worker processes), ``overhead_s`` is the process's wall
time outside that span. The ideal is C over the mean run latency on a virtual clock.

``python -m conclave.benchmarks.batch_ray_bench [--quick] [--runs M] [--concurrency C ...]
[--json PATH]`` prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from conclave.benchmarks.batch_bench import IDEAL_SAMPLE, LATENCY, _config_data, measure_command
from conclave.benchmarks.batch_bench import ideal_latency as _ideal_latency
from conclave.benchmarks.bench_args import write_report
from conclave.benchmarks.load_bench import _table
from conclave.benchmarks.machine import machine_info

__all__ = ["main", "measure", "run_bench"]

ENGINES = ("workers", "ray")
COLUMNS = (
    "engine", "runs", "concurrency", "runs_wall_s", "runs_per_s", "ideal_runs_per_s",
    "fraction_of_ideal", "p50_s", "p95_s", "overhead_s", "process_wall_s", "completed",
)  # fmt: skip


def _engine_flags(engine: str, concurrency: int) -> list[str]:
    if engine == "ray":
        return ["--engine", "ray"]
    return ["--workers", str(min(os.cpu_count() or 1, concurrency))]


def measure(
    engine: str, runs: int, concurrency: int, latency: float = LATENCY, *, ideal: float
) -> dict[str, Any]:
    """One ``conclave batch`` process over ``runs`` tasks on ``engine``; a table row."""
    flags = _engine_flags(engine, concurrency)
    row = measure_command(runs, concurrency, flags, latency, ideal=ideal)
    return {"engine": engine, "runs": runs, "concurrency": concurrency, **row}


def run_bench(
    runs: int,
    concurrencies: Sequence[int],
    engines: Sequence[str],
    out: Path,
    latency: float = LATENCY,
) -> list[dict[str, Any]]:
    scratch = Path(tempfile.mkdtemp())
    try:
        config = scratch / "config.yaml"
        config.write_text(yaml.safe_dump(_config_data(latency)), encoding="utf-8")
        ideal = _ideal_latency(config, min(IDEAL_SAMPLE, runs))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = []
    for concurrency in concurrencies:
        for engine in engines:
            print(f"conclave batch M={runs} C={concurrency} on {engine} ...", file=sys.stderr)
            rows.append(measure(engine, runs, concurrency, latency, ideal=ideal))
    title = (
        f"conclave batch on local workers and on local Ray (3 scripted agents per run, "
        f"L = {latency * 1000:.0f} ms ±50 %, ideal run latency {ideal:.3f} s)"
    )
    print(_table(title, rows, COLUMNS))
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine_info(), "latency": latency, "ideal_run_latency_s": ideal}
    write_report(out, json.dumps({**report, "rows": rows}, indent=2))
    print(f"wrote {out}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.batch_ray_bench", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="100 runs at C = 16")
    parser.add_argument("--runs", type=int, default=1_000, metavar="M")
    parser.add_argument(
        "--concurrency", type=int, action="append", metavar="C", help="repeatable (50)"
    )
    parser.add_argument("--engine", choices=ENGINES, action="append", help="repeatable (both)")
    parser.add_argument("--json", default="bench-results/batch_ray_bench.json", metavar="PATH")
    args = parser.parse_args(argv)
    runs = 100 if args.quick else args.runs
    concurrencies = [16] if args.quick else args.concurrency or [50]
    run_bench(runs, concurrencies, args.engine or list(ENGINES), Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
