"""``conclave batch`` measured through the command itself: runs/s against the ideal.

The same batch as ``conclave bench --scenario batch`` (M independent runs of three scripted
agents, 200 ms ±50 % per call, each run with its event log) is written as a TASKS file and
run by a real ``conclave batch`` process at concurrency C (and, where the machine has more
than one core, over every core with ``--workers``). The rate is M over the time from the
first run's start to the last run's end (``--summary-json``'s ``runs_wall_s``: the process's
start-up is reported apart).

Each run has seeds of its own (its TASKS line's ``overrides`` give its agents those of the
load bench's run of that index, ``Case(seed=i)``), so a run's latencies are the same whatever
runs beside it. With one seed for every run (as this bench had until issue 24's batch work),
the 100 runs' agents drew their jitter from three shared streams in the order their calls
came, which the runtime's speed decides: the batch ``conclave batch`` ran was not the batch
the zero-cost engine ran, and a zero-cost wall is itself 1.50-1.82 s over eight seeds, so
the figure moved by up to 10 % for that alone.

Two ideals, both from the same runs on a virtual clock, where the runtime costs nothing:

* ``ideal_runs_per_s``: C over the mean run latency (sampled over :data:`IDEAL_SAMPLE`
  tasks). It assumes C runs always in flight, which no engine reaches: the batch ends with
  its slowest run, and in the last wave lanes fall idle one by one (with 100 runs at C = 50,
  two waves, a zero-cost engine reaches 0.86 of it; 0.95 with one seed for every run).
* ``zero_cost_runs_per_s``: M over the wall time of this very batch (same tasks, same C,
  the same lanes as ``conclave batch``) on the virtual clock: what an engine costing
  nothing reaches. Issue 24's figure is the fraction of this one.

On a machine shared with other work, the rates move with its load (0.84 against 0.93 of the
zero-cost engine at load averages 5 and 4 in one sitting). ``fraction_on_own_core`` is the
same batch through ``conclave batch``'s engine (``LocalEngine``, an event log per run) in
this process on a :class:`CpuClock`: time passes only as the process uses CPU and jumps
whenever trio would wait, as on a core of the batch's own, whatever else the machine runs.

``python -m conclave.benchmarks.batch_bench [--quick] [--json PATH]`` prints a table and
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing
import yaml

from conclave.actors.batch.claims import Counter
from conclave.actors.batch.engine import LocalEngine
from conclave.actors.batch.lanes import run_lanes
from conclave.actors.batch.work import BatchJob, BatchWork
from conclave.actors.run.driver import RunSpec, run
from conclave.benchmarks.bench_args import write_report
from conclave.benchmarks.load_bench import LOG_ROOT, Case, _table
from conclave.benchmarks.machine import machine_info
from conclave.config.loader import load_config
from conclave.config.schema import ConclaveConfig, ScriptedBackendConfig
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["CpuClock", "main", "measure", "measure_command", "own_core_wall", "settings"]

CONCLAVE = Path(sys.executable).with_name("conclave")
IDEAL_SAMPLE = 100
LATENCY = 0.2
COLUMNS = (
    "runs", "concurrency", "workers", "runs_wall_s", "runs_per_s", "ideal_runs_per_s",
    "fraction_of_ideal", "zero_cost_runs_per_s", "fraction_of_zero_cost",
    "fraction_on_own_core", "ideal_run_latency_s", "p50_s", "p95_s", "process_wall_s",
    "process_cpu_s", "completed", "load_1min",
)  # fmt: skip


def _seeds(run: int) -> list[int]:
    """The seeds of run ``run``'s agents: those of the load bench's batch (``Case(seed=run)``)."""
    config = Case(agents=3, latency=0.0, seed=run).config()
    return [getattr(agent.backend, "seed", 0) for agent in config.agents]


def _agents_data(latency: float, run: int) -> list[dict[str, Any]]:
    """Run ``run``'s agents as a config file (or a TASKS line's overrides) says them."""
    config = Case(agents=3, latency=latency).config()
    return [
        {
            "id": agent.id,
            "backend": {"seed": seed, "latency": latency, "jitter": 0.5 if latency else 0.0},
        }
        for agent, seed in zip(config.agents, _seeds(run), strict=True)
    ]


def _config_data(latency: float) -> dict[str, Any]:
    """The load bench's batch config (``Case(agents=3)``) as a config file says it: run 0's
    agents; each task line gives its run's own (:func:`_task_line`)."""
    orchestrator = Case(agents=3, latency=latency).config().orchestrator
    return {
        "agents": _agents_data(latency, 0),
        "orchestrator": {
            "visibility": orchestrator.visibility,
            "in_flight_policy": orchestrator.in_flight_policy.value,
            "quiet_period": orchestrator.quiet_period,
            "answer_preview_chars": orchestrator.answer_preview_chars,
        },
    }


def _task(i: int) -> str:
    return f"Propose a plan to cut the build time of monorepo #{i} in half."


def _task_line(i: int, latency: float) -> dict[str, Any]:
    """Task ``i`` as a TASKS line: its run's agents are seeded for it (module docstring)."""
    return {"id": i, "task": _task(i), "overrides": {"agents": _agents_data(latency, i)}}


def _run_config(config: ConclaveConfig, run: int) -> ConclaveConfig:
    """``config`` as ``conclave batch`` runs it for task ``run``: its agents seeded for it."""
    agents = []
    for agent, seed in zip(config.agents, _seeds(run), strict=True):
        backend = agent.backend
        assert isinstance(backend, ScriptedBackendConfig)  # the bench's agents are scripted
        agents.append(attrs.evolve(agent, backend=attrs.evolve(backend, seed=seed)))
    return attrs.evolve(config, agents=tuple(agents))


def ideal_latency(config_path: Path, runs: int) -> float:
    """Mean run latency of the batch's first ``runs`` tasks on a virtual clock."""
    durations, _ = _virtual_batch(config_path, runs, runs)
    return statistics.mean(durations)


def zero_cost_wall(config_path: Path, runs: int, concurrency: int) -> float:
    """The wall time of ``runs`` tasks at ``concurrency`` on a virtual clock: what a batch
    engine whose runtime costs nothing would take, lanes and the last wave's tail included."""
    _, wall = _virtual_batch(config_path, runs, concurrency)
    return wall


def _virtual_batch(config_path: Path, runs: int, concurrency: int) -> tuple[list[float], float]:
    """The batch's first ``runs`` tasks in ``concurrency`` lanes on a virtual clock: each
    run's latency (by task), and the batch's wall time."""
    config = load_config(config_path)
    durations = [0.0] * runs

    async def one(i: int) -> None:
        started = trio.current_time()
        await run(RunSpec(task=_task(i), config=_run_config(config, i)))
        durations[i] = trio.current_time() - started

    async def go() -> float:
        started = trio.current_time()
        await run_lanes(concurrency, Counter(runs), one)
        return trio.current_time() - started

    wall = trio.run(go, clock=trio.testing.MockClock(autojump_threshold=0))
    return durations, wall


class CpuClock(trio.abc.Clock):
    """Time that passes only as this process uses CPU, and jumps to the next deadline
    whenever trio would wait: a core of the batch's own, whatever else the machine runs. A
    wait on a thread would be jumped over too: the batch's runs wait on none."""

    def __init__(self) -> None:
        self._jumped = 0.0
        self._cpu_at_start = time.process_time()

    def start_clock(self) -> None:
        self._cpu_at_start = time.process_time()

    def current_time(self) -> float:
        return self._jumped + time.process_time() - self._cpu_at_start

    def deadline_to_sleep_time(self, deadline: float) -> float:
        now = self.current_time()
        if deadline > now:
            self._jumped += deadline - now
        return 0.0


def own_core_wall(config_path: Path, runs: int, concurrency: int, log_root: Path) -> float:
    """The wall time of the batch's first ``runs`` tasks through ``conclave batch``'s engine
    at ``concurrency``, each run with its event log under ``log_root``, on a
    :class:`CpuClock`: from the first run's start to the last outcome reported."""
    config = load_config(config_path)
    jobs = tuple(
        BatchJob(
            key=str(i), task=_task(i), config=_run_config(config, i), log_dir=log_root / str(i)
        )
        for i in range(runs)
    )
    reported: list[float] = []

    async def go() -> float:
        started = trio.current_time()
        engine = LocalEngine(concurrency)
        await engine.run(BatchWork(jobs=jobs), lambda _: reported.append(trio.current_time()))
        return max(reported) - started

    return trio.run(go, clock=CpuClock())


def measure(
    runs: int,
    concurrency: int,
    workers: int,
    latency: float = LATENCY,
    *,
    ideal: float,
    zero_cost: float | None = None,
) -> dict[str, Any]:
    """One ``conclave batch`` process over ``runs`` tasks; its figures as a table row.
    ``zero_cost``: :func:`zero_cost_wall` of this setting, to compare against."""
    row = measure_command(
        runs, concurrency, ["--workers", str(workers)], latency, ideal=ideal, zero_cost=zero_cost
    )
    return {"runs": runs, "concurrency": concurrency, "workers": workers, **row}


def measure_command(
    runs: int,
    concurrency: int,
    flags: Sequence[str],
    latency: float = LATENCY,
    *,
    ideal: float,
    zero_cost: float | None = None,
    env: Mapping[str, str] | None = None,
    stderr: list[str] | None = None,
) -> dict[str, Any]:
    """One ``conclave batch`` process over ``runs`` tasks with ``flags`` (workers, engine):
    its rate against the ideal (and, given ``zero_cost``, against a zero-cost engine's wall
    time for the same batch), run times and the process's wall time. ``env``: the
    process's environment (default: this one's); ``stderr`` gets what it said there."""
    LOG_ROOT.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=LOG_ROOT)).resolve()  # the process runs in it
    try:
        config = scratch / "config.yaml"
        config.write_text(yaml.safe_dump(_config_data(latency)), encoding="utf-8")
        tasks = scratch / "tasks.jsonl"
        tasks.write_text(
            "".join(json.dumps(_task_line(i, latency)) + "\n" for i in range(runs)),
            encoding="utf-8",
        )
        summary = scratch / "summary.json"
        load = os.getloadavg()[0]
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        ran = subprocess.run(
            [
                str(CONCLAVE), "batch", str(tasks), "--out", str(scratch / "results.jsonl"),
                "--config", str(config), "--concurrency", str(concurrency), *flags,
                "--log-dir", str(scratch / "logs"), "--summary-json", str(summary),
            ],
            capture_output=True, text=True, cwd=scratch, env=env,
        )  # fmt: skip
        process_wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if ran.returncode != 0:
            said = "\n".join(ran.stderr.strip().splitlines()[-5:])
            raise RuntimeError(f"conclave batch {' '.join(flags)} exited {ran.returncode}:\n{said}")
        if stderr is not None:
            stderr.extend(ran.stderr.splitlines())
        data = json.loads(summary.read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    [mode] = data["modes"]
    running = data["session"]["runs_wall_s"]
    rate = runs / running
    ideal_rate = concurrency / ideal
    against_zero_cost = (
        {}
        if zero_cost is None
        else {
            "zero_cost_runs_per_s": round(runs / zero_cost, 1),
            "fraction_of_zero_cost": round(rate / (runs / zero_cost), 2),
        }
    )
    return {
        "runs_wall_s": round(running, 2),
        "runs_per_s": round(rate, 1),
        "ideal_runs_per_s": round(ideal_rate, 1),
        "fraction_of_ideal": round(rate / ideal_rate, 2),
        **against_zero_cost,
        "ideal_run_latency_s": round(ideal, 3),
        "p50_s": mode["p50_s"],
        "p95_s": mode["p95_s"],
        "overhead_s": round(process_wall - running, 2),
        "process_wall_s": round(process_wall, 2),
        # Start-up included: what the machine's load does not change, unlike the rates.
        "process_cpu_s": round(
            after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2
        ),
        "completed": mode["completed"],
        "load_1min": round(load, 2),
    }


ISSUE_24 = (100, 50, 1)
"""The setting of issue 24's batch figure: 100 runs at C = 50 in one process."""
FILED_FRACTION = 0.70
TARGET_FRACTION = 0.9


def issue_figure(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Issue 24's batch figure at :data:`ISSUE_24`: as filed, its target, and now, the
    fraction of what a zero-cost engine reaches on the same batch (the issue's C over the
    mean latency overstates that by about 14 %: see the module docstring); ``None`` if that
    setting did not run."""
    runs, concurrency, workers = ISSUE_24
    row = next(
        (
            r
            for r in rows
            if (r["runs"], r["concurrency"], r["workers"]) == (runs, concurrency, workers)
        ),
        None,
    )
    if row is None:
        return None
    now = row["fraction_of_zero_cost"]
    return {
        "figure": "batch, 100 runs at C = 50, one process: fraction of a zero-cost engine",
        "filed": FILED_FRACTION,
        "target": f">= {TARGET_FRACTION:g}",
        "now": now,
        "now_of_c_over_latency": row["fraction_of_ideal"],
        "met": now >= TARGET_FRACTION,
    }


def settings(quick: bool) -> list[tuple[int, int, int]]:
    """(runs, concurrency, workers): the load bench's batch settings."""
    if quick:
        return [ISSUE_24]
    cores = os.cpu_count() or 1
    rows = [(1_000, 50, 1), (1_000, 200, 1)]
    return rows + ([(1_000, 200, cores)] if cores > 1 else []) + [ISSUE_24]


def run_bench(
    rows_settings: Sequence[tuple[int, int, int]], out: Path, latency: float = LATENCY
) -> list[dict[str, Any]]:
    scratch = Path(tempfile.mkdtemp())
    try:
        config = scratch / "config.yaml"
        config.write_text(yaml.safe_dump(_config_data(latency)), encoding="utf-8")
        sample = min(IDEAL_SAMPLE, max(runs for runs, _, _ in rows_settings))
        ideal = ideal_latency(config, sample)
        zero_cost = {
            (runs, concurrency): zero_cost_wall(config, runs, concurrency)
            for runs, concurrency, _ in rows_settings
        }
        own_core = {
            (runs, concurrency): own_core_wall(
                config, runs, concurrency, scratch / f"own-core-{runs}-{concurrency}"
            )
            for runs, concurrency, workers in rows_settings
            if workers == 1
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = []
    for runs, concurrency, workers in rows_settings:
        print(f"conclave batch M={runs} C={concurrency} workers={workers} ...", file=sys.stderr)
        row = measure(
            runs, concurrency, workers, latency, ideal=ideal, zero_cost=zero_cost[runs, concurrency]
        )
        wall = own_core.get((runs, concurrency)) if workers == 1 else None
        row["fraction_on_own_core"] = (
            "-" if wall is None else round(zero_cost[runs, concurrency] / wall, 2)
        )
        rows.append(row)
    title = f"conclave batch (3 scripted agents per run, L = {latency * 1000:.0f} ms ±50 %)"
    print(_table(title, rows, COLUMNS))
    figure = issue_figure(rows)
    if figure is not None:
        columns = ("figure", "filed", "target", "now", "now_of_c_over_latency", "met")
        title = (
            "issue 24's figure: as filed (of C / latency), the target, now (of a zero-cost "
            "engine, and of C / latency)"
        )
        print(_table(title, [figure], columns))
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine_info(), "latency": latency, "rows": rows, "issue_24": figure}
    write_report(out, json.dumps(report, indent=2))
    print(f"wrote {out}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.batch_bench", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="100 runs at C = 50 only")
    parser.add_argument("--json", default="bench-results/batch_bench.json", metavar="PATH")
    args = parser.parse_args(argv)
    tune_gc_for_actors()  # as conclave batch does: the own-core figure runs its engine here
    run_bench(settings(args.quick), Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
