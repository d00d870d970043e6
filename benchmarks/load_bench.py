"""Load benchmarks of many parallel agents on the scripted backend (``conclave bench``).

Scenarios (each prints a table and writes JSON with machine info, parameters and figures):

* ``big``: one coordinated run of N agents. The *ideal* is the same run on a virtual clock
  (trio's MockClock with autojump): there every piece of runtime work takes zero time, so
  its duration is exactly the critical path of LLM latencies the run had to wait for.
  Each case runs in its own process so peak RSS belongs to that case alone. The rows issue
  24 sets a target for (:data:`BIG_TARGETS`) print it and whether it is met; CPU time is
  printed beside wall time, which other processes on a shared machine inflate. Then what
  the event log costs: the same run (ring, L = 0, so all runtime work) with its log and
  without, interleaved, against :data:`LOG_COST_TARGET`. Then the floor of each targeted
  case (:mod:`benchmarks.floor`: the same ring run's messages and waits in bare trio), whose
  CPU per agent is the least any runtime spends, beside the run's own.
* ``batch``: M independent 3-agent runs at concurrency C; runs/s against C / run latency.
* ``storm``: all-to-all with refinement on: LLM requests and restarts per run for each
  in-flight policy, against the 2N+1 floor (N answers, N votes, one presentation). Its
  rounds have no tools, so ``inject`` runs there as ``finish`` (see STORM_POLICIES).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache, partial
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TextIO

import attrs
import trio
import trio.testing

from conclave.actors.batch.claims import Counter, SharedCounter
from conclave.actors.batch.engine import split_slots
from conclave.actors.batch.lanes import run_lanes
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import RunResult
from conclave.benchmarks.bench_args import (
    ReportPathChanged,
    add_bench_arguments,
    check_log_root,
    check_report_path,
    write_report,
)
from conclave.benchmarks.floor import measure_floor
from conclave.benchmarks.log_instructions import measure_log_instructions
from conclave.benchmarks.machine import current_rss_kb, filesystem_of, machine_info, peak_rss_kb
from conclave.config.modes import ModeState, apply_modes
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    InFlightPolicy,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.runtime.eventlog import EventLogFailure
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["main"]

TASK = "Propose a plan to cut the build time of a large monorepo in half."
LOG_ROOT = Path(".conclave") / "bench"
"""By default event logs go where a user's runs write theirs (``.conclave/runs`` in the
working directory), not to the system temp directory, which may be another filesystem.
``--log-root`` moves them, e.g. to a tmpfs to measure the runtime without the disk."""
_SCRATCH_ENV = "CONCLAVE_BENCH_SCRATCH"


@contextmanager
def _log_scratch(root: Path = LOG_ROOT) -> Iterator[Path]:
    """A directory for one case's event logs.

    Inside ``conclave bench`` every case's logs stay until the whole benchmark ends: after
    a thousand files are deleted, ext4 scans past the recently freed inodes each time a file
    is created (up to a millisecond here), which would be charged to the next case.
    """
    shared = os.environ.get(_SCRATCH_ENV)
    if shared:
        yield Path(tempfile.mkdtemp(dir=shared))
        return
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        yield Path(tmp)


@attrs.frozen(kw_only=True)
class Case:
    agents: int
    latency: float
    visibility: str = "all"
    refinement: bool = True
    policy: str = "finish"
    quiet: float | None = 0.1
    seed: int = 0
    repeats: int = 1

    def config(self) -> ConclaveConfig:
        jitter = 0.5 if self.latency else 0.0
        agents = tuple(
            AgentConfig(
                id=f"a{i:05d}",
                backend=ScriptedBackendConfig(
                    seed=self.seed * 100_003 + i, latency=self.latency, jitter=jitter
                ),
            )
            for i in range(self.agents)
        )
        orchestrator = OrchestratorConfig(
            visibility=self.visibility,
            in_flight_policy=InFlightPolicy(self.policy),
            quiet_period=self.quiet,
            answer_preview_chars=400,
        )
        config = ConclaveConfig(agents=agents, orchestrator=orchestrator)
        return apply_modes(config, ModeState(refinement=self.refinement))


def _virtual(case: Case) -> tuple[RunResult, float]:
    """Run on a virtual clock; returns the result and its virtual duration."""
    clock = trio.testing.MockClock(autojump_threshold=0)

    async def go() -> tuple[RunResult, float]:
        start = trio.current_time()
        result = await run(RunSpec(task=TASK, config=case.config()))
        return result, trio.current_time() - start

    return trio.run(go, clock=clock)


BIG_TARGETS: dict[tuple[int, float, str], float] = {
    (1_000, 0.2, "ring"): 1.2,
    (10_000, 0.2, "ring"): 3.0,
}
"""Issue 24's targets for wall / ideal, by agents, latency and visibility."""
LOG_COST_TARGET = 0.15
"""A run with its event log may take at most this fraction more than without (issue 24)."""


@attrs.frozen(kw_only=True)
class _Measured:
    wall: float
    cpu: float
    result: RunResult
    log_bytes: int


def _timed_run(config: ConclaveConfig, log_dir: Path | None, failures: list[str]) -> _Measured:
    """One run in a fresh ``trio.run``: its wall and CPU time and its log's size."""
    spec = RunSpec(task=TASK, config=config, log_dir=log_dir)
    started, cpu_started = time.perf_counter(), time.process_time()
    result = trio.run(partial(run, spec, on_log_failure=_noting(failures)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    size = (log_dir / "events.jsonl").stat().st_size if log_dir is not None else 0
    return _Measured(wall=wall, cpu=cpu, result=result, log_bytes=size)


def measure_big_run(case: Case) -> dict[str, Any]:
    """One case, in this process: ``case.repeats`` real runs (each with its event log), then
    the virtual ideal. Figures are those of the median run by wall time; the range of
    wall/ideal over all repeats is reported next to it, because this machine is noisy."""
    baseline = current_rss_kb()
    measured: list[_Measured] = []
    log_failures: list[str] = []
    config = case.config()
    with _log_scratch() as tmp:
        for repeat in range(case.repeats):
            measured.append(_timed_run(config, tmp / f"run{repeat}", log_failures))
        peak = peak_rss_kb()
    ideal = _virtual(case)[1] if case.latency else 0.0
    measured.sort(key=lambda m: m.wall)
    median = measured[len(measured) // 2]
    wall, result, log_bytes = median.wall, median.result, median.log_bytes
    ratios = [m.wall / ideal for m in measured] if ideal else []
    target = BIG_TARGETS.get((case.agents, case.latency, case.visibility))
    return {
        **attrs.asdict(case),
        "termination": result.termination,
        "wall_s": round(wall, 3),
        "cpu_s": round(median.cpu, 3),
        "ideal_s": round(ideal, 3),
        "wall_over_ideal": round(wall / ideal, 2) if ideal else None,
        "ratio_range": f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else None,
        "target": f"<= {target}" if target is not None else None,
        "met": round(wall / ideal, 2) <= target if target is not None and ideal else None,
        "llm_started": result.llm_calls,
        "llm_completed": result.llm_completed,
        "restarts": result.restarts,
        "messages_routed": result.messages_routed,
        "messages_per_s": round(result.messages_routed / wall) if wall else None,
        "dead_letters": result.dead_letters,
        "peak_rss_mb": round(peak / 1024, 1),
        "rss_per_agent_kb": round((peak - baseline) / case.agents, 1),
        "event_log_mb": round(log_bytes / 1e6, 2),
        **_log_failure_fields(log_failures),
    }


def measure_log_cost(agents: int, repeats: int) -> dict[str, Any]:
    """What the event log costs one run, in this process: the big run of ``agents`` (ring,
    L = 0: all runtime work, nothing hides the log's cost) with its log and without,
    ``repeats`` times each, in pairs of adjacent runs, the pairs alternating which goes
    first, so drift on a shared machine hits both alike. Two estimates of the CPU cost: the
    ratio of the medians, and the median of the pairs' ratios (two runs seconds apart share
    the machine's state; on a shared VM one pair read anywhere from -20 % to +69 %, so a
    verdict needs many pairs). The verdict needs both at the target; wall medians, which
    other processes inflate, are shown beside them."""
    config = Case(agents=agents, latency=0.0, visibility="ring").config()
    on: list[_Measured] = []
    off: list[_Measured] = []
    log_failures: list[str] = []
    with _log_scratch() as tmp:
        # Unmeasured: imports, the codec's generated functions and the allocator warm up.
        _timed_run(config, tmp / "warm-up", [])
        for repeat in range(repeats):
            order = (True, False) if repeat % 2 == 0 else (False, True)
            for logged in order:
                if logged:
                    on.append(_timed_run(config, tmp / f"run{repeat}", log_failures))
                else:
                    off.append(_timed_run(config, None, log_failures))
    # Rounded before the verdict, so that the row's figures give its verdict.
    cpu_on, cpu_off = (round(statistics.median(m.cpu for m in ms), 3) for ms in (on, off))
    wall_on, wall_off = (round(statistics.median(m.wall for m in ms), 3) for ms in (on, off))
    cost = round(cpu_on / cpu_off - 1, 3)
    paired = round(statistics.median(a.cpu / b.cpu for a, b in zip(on, off, strict=True)) - 1, 3)
    return {
        "agents": agents,
        "latency": 0.0,
        "visibility": "ring",
        "repeats": repeats,
        "wall_off_s": wall_off,
        "wall_on_s": wall_on,
        "cpu_off_s": cpu_off,
        "cpu_on_s": cpu_on,
        "log_cost_cpu": f"{cost:+.1%}",
        "log_cost_cpu_paired": f"{paired:+.1%}",
        "log_cost_wall": f"{wall_on / wall_off - 1:+.0%}",
        "target": f"<= {LOG_COST_TARGET:.0%}",
        "met": cost <= LOG_COST_TARGET and paired <= LOG_COST_TARGET,
        "event_log_mb": round(statistics.median(m.log_bytes for m in on) / 1e6, 2),
        "all_completed": all(m.result.termination == "completed" for m in (*on, *off)),
        **_log_failure_fields(log_failures),
    }


def _noting(failures: list[str]) -> Callable[[EventLogFailure], None]:
    """An ``on_log_failure`` that keeps what each stopped log said."""
    return lambda failure: failures.append(str(failure))


def _log_failure_fields(failures: Sequence[str]) -> dict[str, Any]:
    """A row's count of runs whose event log stopped (a full disk), and the first's reason:
    their figures do not include the full cost of logging."""
    return {"log_failures": len(failures), "log_failure": failures[0] if failures else None}


def _in_subprocess(case: Case) -> dict[str, Any]:
    return _subprocess_row("--case", json.dumps(attrs.asdict(case)))


def _log_cost_in_subprocess(agents: int, repeats: int) -> dict[str, Any]:
    return _subprocess_row("--log-cost", json.dumps({"agents": agents, "repeats": repeats}))


def _floor_in_subprocess(case: Case) -> dict[str, Any]:
    floor = {"agents": case.agents, "latency": case.latency, "quiet": case.quiet or 0.0}
    return _subprocess_row("--floor", json.dumps({**floor, "repeats": case.repeats}))


def floor_cases(cases: Sequence[Case], quick: bool) -> list[Case]:
    """The cases whose floor is measured: those with a target (:data:`BIG_TARGETS`), with
    refinement on as their rows are; a quick run's largest ring case with latency instead."""
    if quick:
        ring = [c for c in cases if c.visibility == "ring" and c.latency and c.refinement]
        return [max(ring, key=lambda c: c.agents)] if ring else []
    return [c for c in cases if (c.agents, c.latency, c.visibility) in BIG_TARGETS and c.refinement]


def with_runtime_cpu(floor: dict[str, Any], big: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A floor row with the CPU per agent of the big row it is the floor of, and their ratio."""
    key = (floor["agents"], floor["latency"])
    match = next(
        (
            r
            for r in big
            if (r["agents"], r["latency"]) == key and r["visibility"] == "ring" and r["refinement"]
        ),
        None,
    )
    if match is None:
        return floor
    runtime = round(match["cpu_s"] / match["agents"] * 1e6, 1)
    return {
        **floor,
        "run_cpu_us_per_agent": runtime,
        "run_over_floor_cpu": round(runtime / floor["cpu_us_per_agent"], 1),
        "run_wall_over_ideal": match["wall_over_ideal"],
    }


def _subprocess_row(*args: str) -> dict[str, Any]:
    """A row measured by ``python -m conclave.benchmarks.load_bench ARGS`` in its own
    process, so its peak RSS and its heap are its own."""
    out = subprocess.run(
        [sys.executable, "-m", "conclave.benchmarks.load_bench", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def big_run_cases(quick: bool) -> list[Case]:
    sizes = (10, 100) if quick else (10, 100, 1_000, 10_000)
    cases = []
    for n in sizes:
        for latency in (0.0, 0.2):
            for visibility in ("all", "ring") if n <= 100 else ("ring",):
                for refinement in (True, False):
                    cases.append(
                        Case(
                            agents=n,
                            latency=latency,
                            visibility=visibility,
                            refinement=refinement,
                            # Median of three where a run takes seconds, not minutes.
                            repeats=3 if n <= 1_000 and not quick else 1,
                        )
                    )
    return cases


def _batch_configs(runs: int, latency: float) -> list[ConclaveConfig]:
    return [Case(agents=3, latency=latency, seed=i).config() for i in range(runs)]


async def _run_batch(
    configs: Sequence[ConclaveConfig],
    slots: int,
    log_root: Path | None,
    claim: Callable[[], int | None],
    log_failures: list[str] | None = None,
) -> list[float]:
    """Run configs in ``slots`` lanes of :func:`actors.batch.lanes.run_lanes` (the lanes
    ``conclave batch`` runs); processes sharing one claim counter balance themselves.
    Returns each run's duration on the current clock; what each stopped event log said is
    added to ``log_failures``."""
    durations: list[float] = []
    noted = _noting(log_failures) if log_failures is not None else None

    async def run_one(i: int) -> None:
        started = trio.current_time()
        log_dir = log_root / f"run{i}" if log_root is not None else None
        await run(RunSpec(task=TASK, config=configs[i], log_dir=log_dir), on_log_failure=noted)
        durations.append(trio.current_time() - started)

    await run_lanes(slots, claim, run_one)
    return durations


def _counter(runs: int) -> Callable[[], int | None]:
    return Counter(runs).claim


@cache
def virtual_batch(runs: int, concurrency: int, latency: float) -> tuple[float, float]:
    """The batch on a virtual clock, where runtime work takes no time: returns the mean run
    latency (the ideal's denominator) and the wall time a zero-cost runtime would need, which
    is longer than runs * latency / C because the last wave of runs finishes unevenly.
    Cached: it is deterministic, and settings differing only in workers share it."""
    configs = _batch_configs(runs, latency)

    async def go() -> tuple[float, float]:
        started = trio.current_time()
        durations = await _run_batch(configs, concurrency, None, _counter(runs))
        return statistics.mean(durations), trio.current_time() - started

    return trio.run(go, clock=trio.testing.MockClock(autojump_threshold=0))


def run_batch_worker(
    runs: int,
    slots: int,
    latency: float,
    start_at: float,
    claims: SharedCounter,
    results: Connection,
) -> None:
    """One worker process: ``slots`` lanes claiming runs from the shared ``claims`` (as
    ``conclave batch --workers`` does), each run with its own event log, starting at
    wall-clock ``start_at`` so that workers start together."""
    tune_gc_for_actors()
    # Parsed up front, as a batch file would be: the timed part is running them.
    configs = _batch_configs(runs, latency)
    log_failures: list[str] = []
    with _log_scratch() as tmp:
        time.sleep(max(0.0, start_at - time.time()))
        cpu_started = time.process_time()
        durations = trio.run(_run_batch, configs, slots, tmp, claims.claim, log_failures)
        ended = time.time()
        cpu = time.process_time() - cpu_started
    results.send(
        {
            "ended": ended,
            "durations": durations,
            "cpu_s": cpu,
            "peak_rss_kb": peak_rss_kb(),
            "log_failures": log_failures,
        }
    )


def _worker_result(proc: BaseProcess, receiving: Connection) -> dict[str, Any]:
    """The worker's figures, or an error as soon as it dies without sending them (waiting on
    the pipe alone would hang the benchmark forever)."""
    wait([receiving, proc.sentinel])
    if not receiving.poll():
        proc.join()
        raise RuntimeError(f"batch worker failed with exit code {proc.exitcode}")
    output: dict[str, Any] = receiving.recv()
    proc.join()
    return output


def measure_batch(runs: int, concurrency: int, latency: float, workers: int) -> dict[str, Any]:
    """M independent 3-agent runs at total concurrency C, over ``workers`` processes that
    claim runs from one shared counter.

    The ideal is C / (mean run latency), with the latency of these very runs (same seeds)
    taken on a virtual clock. One trio loop uses one core; ``workers`` > 1 is how a
    deployment uses the others.
    """
    ideal_latency, zero_cost_wall = virtual_batch(runs, concurrency, latency)
    context = multiprocessing.get_context("spawn")
    claims = SharedCounter(runs, context)
    start_at = time.time() + 2.0  # time for every worker to import before the start
    slots = split_slots(concurrency, workers)
    pipes = [context.Pipe(duplex=False) for _ in range(workers)]
    procs = [
        context.Process(
            target=run_batch_worker,
            args=(runs, slots[w], latency, start_at, claims, pipes[w][1]),
        )
        for w in range(workers)
    ]
    for proc in procs:
        proc.start()
    try:
        outputs = [
            _worker_result(proc, receiving)
            for proc, (receiving, _) in zip(procs, pipes, strict=True)
        ]
    finally:
        for proc in procs:  # after a failure, stop the others rather than leave them running
            if proc.is_alive():
                proc.terminate()
                proc.join()
    wall = max(o["ended"] for o in outputs) - start_at
    durations = [d for o in outputs for d in o["durations"]]
    ideal_rate = concurrency / ideal_latency
    rate = runs / wall
    return {
        "runs": runs,
        "concurrency": concurrency,
        "workers": workers,
        "latency": latency,
        "wall_s": round(wall, 2),
        "runs_per_s": round(rate, 1),
        "ideal_runs_per_s": round(ideal_rate, 1),
        "fraction_of_ideal": round(rate / ideal_rate, 2),
        "zero_cost_fraction": round(runs / zero_cost_wall / ideal_rate, 2),
        "ideal_run_latency_s": round(ideal_latency, 3),
        "mean_run_latency_s": round(statistics.mean(durations), 3),
        "cpu_ms_per_run": round(sum(o["cpu_s"] for o in outputs) / runs * 1000, 2),
        "runs_by_worker": [len(o["durations"]) for o in outputs],
        "peak_rss_mb_per_worker": round(max(o["peak_rss_kb"] for o in outputs) / 1024, 1),
        **_log_failure_fields([f for o in outputs for f in o["log_failures"]]),
    }


STORM_POLICIES = (
    ("cancel", "cancel", None),
    ("finish", "finish", None),
    ("inject (as finish: no tools)", "inject", None),
    ("finish + quiet 100ms", "finish", 0.1),
)
"""Label, in-flight policy, quiet period. The storm's rounds offer no tools besides the
workflow tools, and ``inject`` needs a step boundary, which only a round with tools has:
there its rounds run as ``finish`` (actors/agent/policy.py), and the row says so."""


def measure_storm(
    n: int, label: str, policy: str, quiet: float | None, refinement: bool, seeds: int
) -> dict[str, Any]:
    results = []
    for seed in range(seeds):
        case = Case(
            agents=n, latency=0.2, refinement=refinement, policy=policy, quiet=quiet, seed=seed
        )
        results.append(trio.run(run, RunSpec(task=TASK, config=case.config())))
    requests = [r.llm_calls for r in results]
    return {
        "agents": n,
        "policy": label,
        "refinement": refinement,
        "llm_requests_median": statistics.median(requests),
        "llm_requests_max": max(requests),
        "restarts_median": statistics.median(r.restarts for r in results),
        "floor_2n_plus_1": 2 * n + 1,
        "target": f"<= {4 * n}" if refinement else f"== {2 * n + 1}",
        "met": (max(requests) <= 4 * n) if refinement else all(x == 2 * n + 1 for x in requests),
        "mean_wall_s": round(statistics.mean(r.duration_s for r in results), 3),
    }


# ---------------------------------------------------------------------------- output


def _bar(stream: TextIO, done: int, total: int, label: str) -> None:
    """One frame of a progress bar, redrawn in place with ``\\r``: for a terminal only."""
    width = 24
    filled = width * done // max(total, 1)
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:60]:<60}")
    if done == total:
        stream.write("\n")
    stream.flush()


def _table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    cells = [[_fmt(row.get(c)) for c in columns] for row in rows]
    widths = [
        max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)
    ]
    lines = [title, "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _run_all(
    items: Sequence[tuple[str, Callable[[], dict[str, Any]]]], stream: TextIO | None = None
) -> list[dict[str, Any]]:
    """Every case's row, in order. Progress goes to ``stream`` (stderr): a bar redrawn in
    place on a terminal; elsewhere (a file, a pipe) one plain line per finished case, since
    ``\\r`` frames would pile up in it."""
    out = sys.stderr if stream is None else stream
    on_terminal = out.isatty()
    rows = []
    for i, (label, fn) in enumerate(items):
        if on_terminal:
            _bar(out, i, len(items), label)
        rows.append(fn())
        if not on_terminal:
            out.write(f"{i + 1}/{len(items)} {label}\n")
            out.flush()
    if on_terminal:
        _bar(out, len(items), len(items), "done")
    return rows


def _label(case: Case) -> str:
    refine = "on" if case.refinement else "off"
    return f"big N={case.agents} L={case.latency} {case.visibility} refine={refine}"


BIG_COLUMNS = (
    "agents", "latency", "visibility", "refinement", "repeats", "wall_s", "cpu_s", "ideal_s",
    "wall_over_ideal", "ratio_range", "target", "met",
    "llm_started", "llm_completed", "restarts", "messages_routed", "messages_per_s",
    "dead_letters", "peak_rss_mb", "rss_per_agent_kb", "event_log_mb",
)  # fmt: skip
FLOOR_COLUMNS = (
    "agents", "latency", "repeats", "wall_s", "cpu_s", "ideal_s", "wall_over_ideal",
    "hops_per_agent", "cpu_us_per_agent", "run_cpu_us_per_agent", "run_over_floor_cpu",
    "run_wall_over_ideal",
)  # fmt: skip
LOG_COST_COLUMNS = (
    "agents", "latency", "visibility", "repeats", "wall_off_s", "wall_on_s", "cpu_off_s",
    "cpu_on_s", "log_cost_wall", "log_cost_cpu", "log_cost_cpu_paired", "target", "met",
    "event_log_mb",
)  # fmt: skip
LOG_INSTRUCTIONS_COLUMNS = (
    "agents", "latency", "visibility", "instructions_off_m", "instructions_on_m",
    "log_cost_instructions", "target", "met", "error",
)  # fmt: skip
BATCH_COLUMNS = (
    "runs", "concurrency", "workers", "wall_s", "runs_per_s", "ideal_runs_per_s",
    "fraction_of_ideal", "zero_cost_fraction", "ideal_run_latency_s", "mean_run_latency_s",
    "cpu_ms_per_run", "peak_rss_mb_per_worker",
)  # fmt: skip
STORM_COLUMNS = (
    "agents", "policy", "refinement", "llm_requests_median", "llm_requests_max",
    "restarts_median", "floor_2n_plus_1", "target", "met", "mean_wall_s",
)  # fmt: skip


def run_benchmarks(
    scenarios: Sequence[str], quick: bool, out: Path, log_root: Path = LOG_ROOT
) -> dict[str, Any]:
    with _log_scratch(log_root) as scratch:
        os.environ[_SCRATCH_ENV] = str(scratch)
        try:
            return _run_scenarios(scenarios, quick, out, log_root)
        finally:
            del os.environ[_SCRATCH_ENV]


def _run_scenarios(
    scenarios: Sequence[str], quick: bool, out: Path, log_root: Path
) -> dict[str, Any]:
    logs = {"root": str(log_root), "filesystem": filesystem_of(log_root)}
    report: dict[str, Any] = {
        "machine": machine_info(),
        "quick": quick,
        "event_logs": logs,
        "scenarios": {},
    }
    print(f"event logs under {logs['root']} ({logs['filesystem']})")
    if "big" in scenarios:
        cases = big_run_cases(quick)
        rows = _run_all([(_label(c), partial(_in_subprocess, c)) for c in cases])
        report["scenarios"]["big"] = rows
        title = "one big run (scripted; jitter ±50 % when L > 0; ideal = same run, virtual clock)"
        print(_table(title, rows, BIG_COLUMNS))
        # 15 pairs: with 3, one invocation's verdict was the machine's noise (it read
        # anything from -3 % to +24 % for the same code, 30 pairs +9 % to +14 %).
        agents, pairs = (200, 3) if quick else (2_000, 15)
        label = f"event log on vs off N={agents}"
        rows = _run_all([(label, partial(_log_cost_in_subprocess, agents, pairs))])
        report["scenarios"]["big_log_cost"] = rows
        title = "what the event log costs the big run (ring, L = 0; pairs of adjacent runs)"
        print(_table(title, rows, LOG_COST_COLUMNS))
        # The same cost in instructions, which the machine's drift cannot move (its
        # module docstring); 200 agents in --quick: a run is ~60 x slower under Valgrind.
        counted = 200 if quick else 1_000
        label = f"event log in instructions N={counted}"
        measure = partial(measure_log_instructions, counted, LOG_COST_TARGET)
        rows = _run_all([(label, measure)])
        report["scenarios"]["big_log_instructions"] = rows
        title = "what the event log costs the big run in instructions (Valgrind; ring, L = 0)"
        print(_table(title, rows, LOG_INSTRUCTIONS_COLUMNS))
        big = report["scenarios"]["big"]
        floors = _run_all(
            [
                (f"floor N={c.agents} L={c.latency}", partial(_floor_in_subprocess, c))
                for c in floor_cases(cases, quick)
            ]
        )
        rows = [with_runtime_cpu(row, big) for row in floors]
        report["scenarios"]["big_floor"] = rows
        title = "the floor: the same ring run's messages and waits in bare trio (floor.py)"
        print(_table(title, rows, FLOOR_COLUMNS))
    if "batch" in scenarios:
        runs = 100 if quick else 1_000
        cores = os.cpu_count() or 1
        settings = [(runs, 50, 1)]
        if not quick:
            settings += [(runs, 200, 1)] + ([(runs, 200, cores)] if cores > 1 else [])
        rows = _run_all(
            [
                (f"batch M={m} C={c} workers={w}", partial(measure_batch, m, c, 0.2, w))
                for m, c, w in settings
            ]
        )
        report["scenarios"]["batch"] = rows
        print(_table("many runs (3 scripted agents each, L = 200 ms ±50 %)", rows, BATCH_COLUMNS))
    if "storm" in scenarios:
        sizes = (5, 25) if quick else (5, 25, 50)
        seeds = 1 if quick else 3
        items = [
            (f"storm N={n} {label}", partial(measure_storm, n, label, p, q, True, seeds))
            for n in sizes
            for label, p, q in STORM_POLICIES
        ]
        items += [
            (
                f"storm N={n} refinement off",
                partial(measure_storm, n, "default", "finish", 0.1, False, seeds),
            )
            for n in sizes
        ]
        rows = _run_all(items)
        report["scenarios"]["storm"] = rows
        title = "restart storm (all-to-all, L = 200 ms ±50 %; rounds without tools)"
        print(_table(title, rows, STORM_COLUMNS))
    rows = [row for found in report["scenarios"].values() for row in found]
    logs["failed_runs"] = sum(row.get("log_failures", 0) for row in rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(out, json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


def stopped_logs_warning(report: dict[str, Any]) -> str | None:
    """What to say when some measured runs' event logs stopped (``None`` if none did): their
    figures leave out part of the logging they are meant to include."""
    logs = report["event_logs"]
    failed = logs["failed_runs"]
    if not failed:
        return None
    rows = [row for found in report["scenarios"].values() for row in found]
    first = next(row["log_failure"] for row in rows if row.get("log_failures"))
    return (
        f"the event logs of {failed:,} measured run(s) stopped, so their figures come from "
        f"runs that did not log everything (first: {first}); free space under "
        f"{logs['root']} or choose another --log-root, and measure again"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.load_bench", description=__doc__
    )
    add_bench_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None, args: argparse.Namespace | None = None) -> int:
    if args is None:
        args = build_parser().parse_args(argv)
    tune_gc_for_actors()
    if args.case:
        print(json.dumps(measure_big_run(Case(**json.loads(args.case)))))
        return 0
    if args.log_cost:
        print(json.dumps(measure_log_cost(**json.loads(args.log_cost))))
        return 0
    if args.floor:
        print(json.dumps(measure_floor(**json.loads(args.floor))))
        return 0
    scenarios = args.scenario or ["big", "batch", "storm"]
    # Checked before minutes of measuring, not after; the report's path first, so a bad one
    # leaves no log directory behind.
    for check, value in ((check_report_path, args.json), (check_log_root, args.log_root)):
        problem = check(value)
        if problem:
            print(f"conclave bench: {problem}", file=sys.stderr)
            return 2
    try:
        report = run_benchmarks(scenarios, args.quick, Path(args.json), Path(args.log_root))
    except ReportPathChanged as exc:
        print(f"conclave bench: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        # A disk that filled up while measuring: one line, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(
            f"conclave bench: {where}{exc.strerror or exc}; free space there, or choose "
            "another --log-root or --json",
            file=sys.stderr,
        )
        return 1
    warning = stopped_logs_warning(report)
    if warning is not None:
        print(f"conclave bench: {warning}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
