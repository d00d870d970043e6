"""``conclave batch`` on local worker processes and on Ray, the same batch on both.

The batch is :mod:`benchmarks.batch_bench`'s (M runs of three scripted agents, 200 ms ±50 %
per call, an event log per run), run by a real ``conclave batch`` process at concurrency C:
with ``--workers`` (one per core), and with ``--engine ray`` on the local cluster the
command starts for itself (every core, a 100 MB object store, loopback only). Rates are M
over the first run's start to the last run's end; ``process_wall_s`` includes start-up and
shut-down (Ray's cluster and its worker processes), ``overhead_s`` is the process's wall
time outside that span; ``processes`` is how many Ray worker processes ran the runs. The
ideal is C over the mean run latency on a virtual clock.

With ``--baseline DIR`` (a source tree of another Conclave, such as main's: ``git archive
main | tar -x -C DIR``), the engine ``ray-baseline`` is the same command with DIR first on
``PYTHONPATH`` (its Ray workers inherit it), measured alternately with this Conclave's
``ray``, ``--rounds`` times, so both see the same load on the machine.

The figure is issue 28's: the fraction of ideal on local Ray, as filed (0.49, with ~29 s of
start and stop, one Ray worker process per run), the target (as for a batch on one
machine, :data:`benchmarks.batch_bench.TARGET_FRACTION`) and today's, the median over the
rounds; the command exits 1 when the target is missed.

``python -m conclave.benchmarks.batch_ray_bench [--quick] [--runs M] [--concurrency C ...]
[--engine E ...] [--rounds R] [--baseline DIR] [--json PATH]`` prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from conclave.benchmarks.batch_bench import (
    IDEAL_SAMPLE,
    LATENCY,
    TARGET_FRACTION,
    _config_data,
    measure_command,
)
from conclave.benchmarks.batch_bench import ideal_latency as _ideal_latency
from conclave.benchmarks.bench_args import measure_and_report, positive_int
from conclave.benchmarks.load_bench import _table
from conclave.benchmarks.machine import machine_info

__all__ = ["FILED_FRACTION", "issue_figure", "main", "measure", "run_bench"]

ENGINES = ("workers", "ray", "ray-baseline")
FILED_FRACTION = 0.49
"""Issue 28's figure: local Ray with one Ray worker process per run (~29 s of start and
stop)."""
COLUMNS = (
    "engine", "round", "runs", "concurrency", "runs_wall_s", "runs_per_s", "ideal_runs_per_s",
    "fraction_of_ideal", "p50_s", "p95_s", "overhead_s", "process_wall_s", "processes",
    "completed",
)  # fmt: skip
_RAY_PROCESSES = re.compile(r"Ray: [\d,]+ runs? in ([\d,]+) worker process")


def _engine_flags(engine: str, concurrency: int) -> list[str]:
    if engine == "workers":
        return ["--workers", str(min(os.cpu_count() or 1, concurrency))]
    return ["--engine", "ray"]


def _environment(engine: str, baseline: Path | None) -> dict[str, str] | None:
    if engine != "ray-baseline":
        return None
    if baseline is None:
        raise ValueError("the ray-baseline engine needs --baseline DIR")
    path = [str(baseline), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def measure(
    engine: str,
    runs: int,
    concurrency: int,
    latency: float = LATENCY,
    *,
    ideal: float,
    baseline: Path | None = None,
) -> dict[str, Any]:
    """One ``conclave batch`` process over ``runs`` tasks on ``engine``; a table row."""
    said: list[str] = []
    row = measure_command(
        runs,
        concurrency,
        _engine_flags(engine, concurrency),
        latency,
        ideal=ideal,
        env=_environment(engine, baseline),
        stderr=said,
    )
    found = [m for line in said if (m := _RAY_PROCESSES.search(line))]
    processes = int(found[-1].group(1).replace(",", "")) if found else None
    return {"engine": engine, "runs": runs, "concurrency": concurrency, **row,
            "processes": processes}  # fmt: skip


def issue_figure(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Issue 28's figure from the ``ray`` rows (``None`` without any): as filed, the target,
    the baseline's and today's fraction of ideal (medians over the rounds)."""

    def median(engine: str, key: str) -> float | None:
        values = [r[key] for r in rows if r["engine"] == engine]
        return round(statistics.median(values), 2) if values else None

    now = median("ray", "fraction_of_ideal")
    if now is None:
        return None
    return {
        "figure": "local Ray: fraction of ideal (median of rounds)",
        "filed": FILED_FRACTION,
        "target": f">= {TARGET_FRACTION:g}",
        "baseline": median("ray-baseline", "fraction_of_ideal"),
        "now": now,
        "baseline_overhead_s": median("ray-baseline", "overhead_s"),
        "overhead_s": median("ray", "overhead_s"),
        "met": now >= TARGET_FRACTION,
    }


def run_bench(
    runs: int,
    concurrencies: Sequence[int],
    engines: Sequence[str],
    latency: float = LATENCY,
    *,
    rounds: int = 1,
    baseline: Path | None = None,
) -> dict[str, Any]:
    """Every engine at every concurrency, ``rounds`` times, the engines' order reversed
    every other round (so neither of two compared engines always runs first); the report."""
    scratch = Path(tempfile.mkdtemp())
    try:
        config = scratch / "config.yaml"
        config.write_text(yaml.safe_dump(_config_data(latency)), encoding="utf-8")
        ideal = _ideal_latency(config, min(IDEAL_SAMPLE, runs))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = []
    for concurrency in concurrencies:
        for number in range(1, rounds + 1):
            order = engines if number % 2 else list(reversed(engines))
            for engine in order:
                print(f"conclave batch M={runs} C={concurrency} on {engine}, round {number} ...",
                      file=sys.stderr)  # fmt: skip
                row = measure(engine, runs, concurrency, latency, ideal=ideal, baseline=baseline)
                rows.append({**row, "round": number})
    return {
        "benchmark": "batch_ray_bench",
        "machine": machine_info(),
        "latency": latency,
        "ideal_run_latency_s": ideal,
        "baseline": None if baseline is None else str(baseline),
        "rows": rows,
        "issue_28": issue_figure(rows),
    }


def format_table(report: dict[str, Any]) -> str:
    title = (
        f"conclave batch on local workers and on local Ray (3 scripted agents per run, "
        f"L = {report['latency'] * 1000:.0f} ms ±50 %, ideal run latency "
        f"{report['ideal_run_latency_s']:.3f} s)"
    )
    rows = [{**r, "processes": "-" if r["processes"] is None else r["processes"]}
            for r in report["rows"]]  # fmt: skip
    text = _table(title, rows, COLUMNS)
    figure = report["issue_28"]
    if figure is not None:
        columns = ("figure", "filed", "target", "baseline", "now", "baseline_overhead_s",
                   "overhead_s", "met")  # fmt: skip
        shown = {k: "-" if v is None else v for k, v in figure.items()}
        text += "\n" + _table("issue 28's figure: as filed, the target, now", [shown], columns)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.batch_ray_bench", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="100 runs at C = 16")
    parser.add_argument("--runs", type=positive_int, default=1_000, metavar="M")
    parser.add_argument(
        "--concurrency", type=positive_int, action="append", metavar="C", help="repeatable (50)"
    )
    parser.add_argument(
        "--engine", choices=ENGINES, action="append",
        help="repeatable (workers and ray; with --baseline, ray-baseline and ray)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=positive_int, default=1, metavar="R")
    parser.add_argument("--baseline", metavar="DIR", help="another Conclave's source tree")
    parser.add_argument("--json", default="bench-results/batch_ray_bench.json", metavar="PATH")
    args = parser.parse_args(argv)
    baseline = None if args.baseline is None else Path(args.baseline).resolve()
    if baseline is not None and not (baseline / "conclave" / "__init__.py").is_file():
        parser.error(f"--baseline {args.baseline}: no conclave/__init__.py there; pass the "
                     "root of a Conclave source tree")  # fmt: skip
    engines = args.engine or (["ray-baseline", "ray"] if baseline else ["workers", "ray"])
    if "ray-baseline" in engines and baseline is None:
        parser.error("--engine ray-baseline needs --baseline DIR")
    runs = 100 if args.quick else args.runs
    concurrencies = [16] if args.quick else args.concurrency or [50]
    return measure_and_report(
        args.json,
        lambda: run_bench(runs, concurrencies, engines, rounds=args.rounds, baseline=baseline),
        format_table,
        met=lambda report: report["issue_28"] is None or report["issue_28"]["met"],
    )


if __name__ == "__main__":
    raise SystemExit(main())
