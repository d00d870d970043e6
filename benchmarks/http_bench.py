"""``conclave bench --scenario http``: the big run with every agent on the ``openai`` backend.

The same run as the ``big`` scenario's (N agents answer, see each other's answers, vote; a
winner presents), but each agent talks to an OpenAI-compatible server on loopback through the
``openai`` backend over real sockets. The server (:mod:`benchmarks.http_server`) runs in its
own process and answers as the scripted backend would, after 200 ms ±50 %, so the run
coordinates as a scripted one does and only the client's cost is added. Each case runs twice,
each time in a fresh process against a fresh server:

* ``conclave run --config`` as a user runs it: ``process_wall_s`` from spawn to exit,
  start-up, imports and exit included; ``first_request_s`` from spawn to the server's
  first request (the start-up); ``first_request_cpu_s``, the CPU the same command spends
  before its first request leaves (the median of :data:`CPU_REPEATS` more processes, each
  stopped at its first connect: steadier than the wall on a shared machine), and
  ``first_request_modules``, how many modules it had loaded by then;
  ``process_cpu_s``; ``peak_rss_mb``; ``command_requests`` served;
* the run alone, measured inside a client process with the backend already imported,
  ``runs`` times (each against a fresh server; the figures are the median run's, and
  ``requests_per_run`` lists every run's count, since one run alone hides the runs where
  votes were cast again): ``wall_s``, against ``ideal_s`` (the same run on the scripted
  backend on a virtual clock, where runtime work takes no time: the critical path of LLM
  latencies); ``requests`` served,
  against ``scripted_requests`` (the target is the same count);
  ``client_cpu_ms_per_request`` (the client's CPU during the run over the requests), next to
  ``scripted_cpu_ms_per_request`` (the same run on the scripted backend in real time: the
  runtime's own share). ``runs`` lists every client run in the order run, each with the
  one-minute load average it began at (``load_average``: their least and most): on a shared
  machine the wall ratio moves between identical runs (at N = 50, 1.10-1.46 in one sitting
  at load 4.8-7.2, in this benchmark and in client runs started alone alike), much more
  than the CPU per request; the loopback server's priority is not the cause (niced to -10,
  alone or with the client, the ratio was no better).

Then :mod:`benchmarks.http_costs` says where the client's time goes: start-up and exit by
import, one request's CPU layer by layer, and a reply's CPU per token streamed. Last, the
issue's figures (issue 24): each with the value measured when it was filed, its target, and
today's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
import yaml

from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import RunResult
from conclave.benchmarks.bench_args import (
    ReportPathChanged,
    add_bench_arguments,
    check_log_root,
    check_report_path,
    write_report,
)
from conclave.benchmarks.bytecode import compile_conclave
from conclave.benchmarks.http_costs import request_costs, startup_costs, token_costs
from conclave.benchmarks.http_server import model_name, open_server_process
from conclave.benchmarks.load_bench import TASK, Case, _log_scratch, _table, _virtual
from conclave.benchmarks.load_bench import main as load_bench_main
from conclave.benchmarks.machine import machine_info, peak_rss_kb
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = [
    "SIZES",
    "TARGETS",
    "Target",
    "bench_command",
    "http_config",
    "main",
    "measure",
    "open_server_process",
    "run_http_bench",
]

SIZES = (10, 50, 200)
LATENCY = 0.2
JITTER = 0.5
DEFAULT_JSON = "bench-results/http_bench.json"
LOAD_DEFAULT_JSON = "bench-results/load_bench.json"
DEFAULT_SCENARIOS = ("big", "batch", "storm")
"""What ``conclave bench`` runs without ``--scenario``: ``http`` only when asked for."""
LOOPBACK_KEY = Secret("sk-bench-loopback")
"""Sent to the loopback server, which ignores it."""
RUNS = {10: 3, 50: 5, 200: 3}
"""Client runs per size (3 for a size not named here)."""
CPU_REPEATS = 3
"""Processes per ``first_request_cpu_s``."""
_STOPPED_AT_FIRST_CONNECT = """
import os, sys, time
def stop(event, args):
    if event == "socket.connect":
        print(time.process_time(), len(sys.modules), flush=True)
        os._exit(0)
sys.addaudithook(stop)
from conclave.ui.entry import main
sys.argv[0] = "conclave"
sys.exit(main())
"""
"""``conclave`` whose audit hook prints its CPU seconds and the number of modules it has
loaded, and ends it at its first connect."""


@attrs.frozen(kw_only=True)
class Target:
    """One figure a row must meet: ``column`` at most ``at_most`` at ``agents`` agents
    (``None``: every N); ``filed`` is the figure when issue 24 was filed (``None``: a
    target from before it)."""

    column: str
    agents: int | None
    at_most: float
    filed: float | None = None
    figure: str = ""

    @property
    def key(self) -> str:
        return self.column if self.agents is None else f"{self.column}@{self.agents}"


TARGETS = (
    Target(column="process_wall_s", agents=50, at_most=1.5),
    Target(column="peak_rss_mb", agents=50, at_most=120.0),
    Target(
        column="wall_over_ideal",
        agents=50,
        at_most=1.15,
        filed=1.51,
        figure="openai backend over loopback HTTP, 50 agents: wall / ideal",
    ),
    Target(
        column="wall_over_ideal",
        agents=200,
        at_most=1.3,
        filed=2.8,
        figure="openai backend, 200 agents ring: wall / ideal",
    ),
    Target(
        column="client_cpu_ms_per_request",
        agents=50,
        at_most=1.5,
        filed=8.1,
        figure="client CPU per streamed request, N = 50",
    ),
    Target(
        column="client_cpu_ms_per_request",
        agents=200,
        at_most=1.5,
        filed=4.8,
        figure="client CPU per streamed request, N = 200",
    ),
    Target(
        column="max_requests_per_run",
        agents=50,
        at_most=2 * 50 + 3,
        filed=164,
        figure="LLM requests per run, 50 agents over HTTP (the most of every run)",
    ),
    Target(
        column="first_request_s",
        agents=50,
        at_most=0.3,
        filed=0.64,
        figure="start-up: `conclave run` with the openai backend, spawned to its first request",
    ),
)
"""What each row must meet (see :func:`targets_met`)."""


def case_for(agents: int) -> Case:
    """The ``big`` scenario's case for N agents: all-to-all up to 100 agents, a ring past."""
    return Case(agents=agents, latency=LATENCY, visibility="all" if agents <= 100 else "ring")


def http_config(case: Case, base_url: str) -> ConclaveConfig:
    """``case``'s config with every agent on the ``openai`` backend at ``base_url``; the
    model names the agent's scripted seed, so the server plays the same script.

    ``max_concurrency`` is the number of agents: they share one endpoint, and its default
    limit (16 calls at once, for a real provider) would queue the run behind itself."""
    config = case.config()
    agents = []
    for agent in config.agents:
        scripted = agent.backend
        assert isinstance(scripted, ScriptedBackendConfig)
        backend = OpenAIBackendConfig(
            model=model_name(agent.id, scripted.seed),
            base_url=base_url,
            api_key=LOOPBACK_KEY,
            max_concurrency=case.agents,
        )
        agents.append(AgentConfig(id=agent.id, persona=agent.persona, backend=backend))
    return attrs.evolve(config, agents=tuple(agents))


def _timed_run(config: ConclaveConfig, log_dir: Path) -> tuple[RunResult, float, float]:
    """One run with its event log: its result, wall time and this process's CPU time."""
    cpu = time.process_time()
    began = time.perf_counter()
    result = trio.run(run, RunSpec(task=TASK, config=config, log_dir=log_dir))
    return result, time.perf_counter() - began, time.process_time() - cpu


def client(case: Case, base_url: str, log_root: Path) -> dict[str, Any]:
    """The run in this process, as the client being measured: the backend imported first (its
    cost shows in the process wall, not the run's), then the run with its event log; then
    the same run on the scripted backend in real time, whose CPU is the runtime's own."""
    started = time.time()
    import conclave.actors.llm.openai_backend  # noqa: F401  (imported by the pool on first use anyway)

    imported = time.time()
    with _log_scratch(log_root) as tmp:
        result, wall, cpu = _timed_run(http_config(case, base_url), tmp / "http")
        peak = peak_rss_kb()
        scripted, _, scripted_cpu = _timed_run(case.config(), tmp / "scripted")
    return {
        "sdk_import_s": round(imported - started, 3),
        "termination": str(result.termination.value),
        "wall_s": wall,
        "cpu_s": cpu,
        "llm_calls": result.llm_calls,
        "failed_agents": len(result.failed_agents),
        "peak_rss_kb": peak,
        "scripted_cpu_s": scripted_cpu,
        "scripted_llm_calls": scripted.llm_calls,
    }


def config_data(case: Case, base_url: str) -> dict[str, Any]:
    """:func:`http_config` as a config file says it, for ``conclave run --config``."""
    config = http_config(case, base_url)
    orchestrator = config.orchestrator
    return {
        "agents": [
            {
                "id": agent.id,
                "backend": {
                    "type": "openai",
                    "model": agent.backend.model,
                    "base_url": base_url,
                    "api_key": LOOPBACK_KEY.reveal(),
                    "max_concurrency": case.agents,
                },
            }
            for agent in config.agents
            if isinstance(agent.backend, OpenAIBackendConfig)
        ],
        "orchestrator": {
            "visibility": orchestrator.visibility,
            "in_flight_policy": orchestrator.in_flight_policy.value,
            "quiet_period": orchestrator.quiet_period,
            "answer_preview_chars": orchestrator.answer_preview_chars,
        },
    }


@attrs.frozen(kw_only=True)
class Finished:
    """A child process that has exited: how long it took and what it used."""

    wall_s: float
    cpu_s: float
    peak_rss_kb: int
    exit_code: int
    stdout: str
    spawned_at: float
    """When it was spawned (seconds since the epoch, as the server's clock reads)."""


def _timed_process(argv: list[str], cwd: Path) -> Finished:
    """Run ``argv`` to its end; its wall time from spawn to exit, and its own rusage (the
    server's is not mixed in, as ``RUSAGE_CHILDREN`` would)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        spawned_at = time.time()
        began = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - began
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode:
            raise RuntimeError(
                f"{' '.join(argv[:4])} ... exited {process.returncode}: "
                f"{err.read().decode(errors='replace')[-2000:]}"
            )
        return Finished(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_rss_kb=usage.ru_maxrss,
            exit_code=process.returncode,
            stdout=out.read().decode(),
            spawned_at=spawned_at,
        )


def _since(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the server served between two readings of its statistics."""
    counted = ("requests", "completions", "connections", "errors", "cpu_s")
    return {**after, **{key: after[key] - before[key] for key in counted}}


def _command_run(case: Case, scratch: Path) -> tuple[Finished, dict[str, Any], dict[str, Any]]:
    """``conclave run --config`` as a user runs it, against a fresh server: the process,
    its JSON result and what the server served."""
    conclave = Path(sys.executable).with_name("conclave")
    with open_server_process() as server:
        config = scratch / "http.yaml"
        config.write_text(yaml.safe_dump(config_data(case, server.url)), encoding="utf-8")
        argv = [str(conclave), "run", "--config", str(config), "--output-format", "json"]
        argv += ["--log-dir", str(scratch / "cli"), TASK]
        before = server.stats()
        finished = _timed_process(argv, scratch)
        served = _since(before, server.stats())
        served["first_request_cpu_s"], served["first_request_modules"] = _first_request_cpu(
            config, scratch
        )
    result: dict[str, Any] = json.loads(finished.stdout)
    return finished, result, served


def _first_request_cpu(config: Path, scratch: Path) -> tuple[float, int]:
    """The median CPU seconds of :data:`CPU_REPEATS` ``conclave run --config`` processes up
    to their first connect, where each is stopped (the request never leaves), and the most
    modules one had loaded by then."""
    cpu, modules = [], []
    for i in range(CPU_REPEATS):
        argv = [sys.executable, "-c", _STOPPED_AT_FIRST_CONNECT, "run", "--config", str(config)]
        argv += ["--output-format", "json", "--log-dir", str(scratch / f"cpu{i}"), TASK]
        seconds, loaded = _timed_process(argv, scratch).stdout.split()[-2:]
        cpu.append(float(seconds))
        modules.append(int(loaded))
    return statistics.median(cpu), max(modules)


def _client_run(case: Case, scratch: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run alone, measured inside a fresh process (:func:`client`), against a fresh
    server: its figures (with the load average it met) and what the server served."""
    load = os.getloadavg()[0]
    with open_server_process() as server:
        argv = [sys.executable, "-m", "conclave.benchmarks.http_bench", "--client"]
        argv += [json.dumps(attrs.asdict(case)), "--url", server.url, "--log-root", str(scratch)]
        before = server.stats()
        finished = _timed_process(argv, scratch)
        served = _since(before, server.stats())
    got: dict[str, Any] = json.loads(finished.stdout)
    got["load_average"] = round(load, 2)
    return got, served


def measure(case: Case, log_root: Path, runs: int = 1) -> dict[str, Any]:
    """One case: ``conclave run`` whole (process wall, peak RSS), then the run alone in a
    client process (run wall, CPU per request) ``runs`` times, each against a fresh server;
    then the scripted ideal on a virtual clock. The client figures are the median run's
    (by wall time); every run's request count is listed."""
    with _log_scratch(log_root) as tmp:
        scratch = tmp.resolve()
        command, result, served_command = _command_run(case, scratch)
        in_order = [_client_run(case, scratch) for _ in range(max(runs, 1))]
    client_runs = sorted(in_order, key=lambda run: float(run[0]["wall_s"]))
    got, served = client_runs[len(client_runs) // 2]
    per_run = [run[1]["requests"] for run in client_runs]
    scripted, ideal = _virtual(case)
    loads = [run[0]["load_average"] for run in in_order]
    requests = served["requests"]
    return {
        "agents": case.agents,
        "visibility": case.visibility,
        "refinement": case.refinement,
        "termination": result["termination"],
        "process_wall_s": round(command.wall_s, 3),
        "process_cpu_s": round(command.cpu_s, 3),
        "peak_rss_mb": round(command.peak_rss_kb / 1024, 1),
        "command_requests": served_command["requests"],
        "first_request_s": round(served_command["first_request_at"] - command.spawned_at, 3),
        "first_request_cpu_s": round(served_command["first_request_cpu_s"], 3),
        "first_request_modules": served_command["first_request_modules"],
        "sdk_import_s": got["sdk_import_s"],
        "wall_s": round(got["wall_s"], 3),
        "ideal_s": round(ideal, 3),
        "wall_over_ideal": round(got["wall_s"] / ideal, 2),
        "wall_over_ideal_range": [
            round(min(r[0]["wall_s"] for r in client_runs) / ideal, 2),
            round(max(r[0]["wall_s"] for r in client_runs) / ideal, 2),
        ],
        "requests": requests,
        "requests_per_run": per_run,
        "load_average": [min(loads), max(loads)],
        "runs": [
            {
                "wall_over_ideal": round(run["wall_s"] / ideal, 2),
                "client_cpu_ms_per_request": round(
                    run["cpu_s"] / max(served_run["requests"], 1) * 1000, 2
                ),
                "requests": served_run["requests"],
                "load_average": run["load_average"],
            }
            for run, served_run in in_order
        ],
        "max_requests_per_run": max(per_run),
        "llm_calls": got["llm_calls"],
        "scripted_requests": scripted.llm_calls,
        "server_errors": served["errors"] + served_command["errors"],
        "connections": served["connections"],
        "client_cpu_ms_per_request": round(got["cpu_s"] / max(requests, 1) * 1000, 2),
        "server_cpu_ms_per_request": round(served["cpu_s"] / max(requests, 1) * 1000, 2),
        "scripted_cpu_ms_per_request": round(
            got["scripted_cpu_s"] / max(got["scripted_llm_calls"], 1) * 1000, 2
        ),
        "client_peak_rss_mb": round(got["peak_rss_kb"] / 1024, 1),
        "failed_agents": got["failed_agents"] + len(result.get("failed_agents") or {}),
    }


def targets_met(row: dict[str, Any]) -> dict[str, bool]:
    """Each target that applies to the row's N, by :attr:`Target.key`, and whether the row
    meets it (the median run's request count must equal the scripted run's too)."""
    met = {
        target.key: row[target.column] <= target.at_most
        for target in TARGETS
        if target.agents is None or target.agents == row["agents"]
    }
    met["requests"] = row["requests"] == row["command_requests"] == row["scripted_requests"]
    return met


def issue_figures(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 24's figures: each as filed, its target, and as measured now (``None`` when
    this benchmark did not run its N)."""
    by_n = {row["agents"]: row for row in rows}
    figures = []
    for target in TARGETS:
        if target.filed is None:
            continue
        row = by_n.get(target.agents) if target.agents is not None else None
        now = row[target.column] if row is not None else None
        figures.append(_figure(target, now))
    return figures


def _figure(target: Target, now: float | None) -> dict[str, Any]:
    return {
        "figure": target.figure,
        "filed": target.filed,
        "target": f"<= {target.at_most:g}",
        "now": now,
        "met": None if now is None else now <= target.at_most,
    }


COLUMNS = (
    "agents", "visibility", "process_wall_s", "first_request_s", "first_request_cpu_s",
    "first_request_modules", "process_cpu_s", "peak_rss_mb",
    "sdk_import_s",
    "wall_s", "ideal_s", "wall_over_ideal", "requests", "command_requests", "scripted_requests",
    "requests_per_run", "load_average",
    "client_cpu_ms_per_request", "scripted_cpu_ms_per_request", "server_cpu_ms_per_request",
    "server_errors",
    "failed_agents", "missed",
)  # fmt: skip


def run_http_bench(
    sizes: Sequence[int],
    out: Path,
    log_root: Path,
    *,
    repeats: int = 300,
    startup_repeats: int = 3,
    runs: int | None = None,
) -> dict[str, Any]:
    """Every size (``runs`` client runs each; :data:`RUNS` by default), then where the time
    goes (``repeats`` requests per layer, the median of ``startup_repeats`` processes per
    start-up), then issue 24's figures; tables on stdout, the report to ``out``. Conclave is
    compiled first (:mod:`benchmarks.bytecode`): processes start as an installed one does."""
    compile_conclave()
    rows = []
    for n in sizes:
        print(f"http N={n} ...", file=sys.stderr, flush=True)
        row = measure(case_for(n), log_root, runs=RUNS.get(n, 3) if runs is None else runs)
        row["missed"] = ",".join(k for k, ok in targets_met(row).items() if not ok) or None
        rows.append(row)
    print("http: start-up and per-request costs ...", file=sys.stderr, flush=True)
    startup = startup_costs(startup_repeats)
    layers = request_costs(repeats)
    tokens = token_costs(max(repeats // 10, 1))
    load = os.getloadavg()
    figures = issue_figures(rows)
    report = {
        "machine": machine_info(),
        "load_average": [round(x, 2) for x in load],
        "latency": f"{LATENCY * 1000:.0f} ms ±{JITTER:.0%}",
        "targets": {t.key: {"agents": t.agents, "at_most": t.at_most} for t in TARGETS},
        "scenarios": {
            "http": rows,
            "http_startup": startup,
            "http_request_layers": layers,
            "http_streamed_tokens": tokens,
        },
        "issue_24": figures,
    }
    title = (
        f"one big run on the openai backend against a loopback server in its own process "
        f"(L = {LATENCY * 1000:.0f} ms ±{JITTER:.0%}; ideal = the scripted run, virtual clock; "
        f"load average {load[0]:.2f})"
    )
    print(_table(title, rows, COLUMNS))
    print(_table("start-up: a fresh process importing...", startup, ("imports", "run_s", "exit_s")))
    columns = ("layer", "prompt_chars", "first_call_cpu_ms", "client_cpu_ms_per_request")
    print(
        _table(
            "one request's client CPU, layer by layer (server replying at once)", layers, columns
        )
    )
    print(
        _table(
            "a reply streamed one token per chunk (server replying at once)",
            [tokens],
            ("streamed_pieces", "client_cpu_ms_per_reply", "client_cpu_us_per_token"),
        )
    )
    print(
        _table(
            "issue 24's figures: as filed, the target, now",
            figures,
            ("figure", "filed", "target", "now", "met"),
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(out, json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


def _report_path(given: str, *, mixed: bool) -> str:
    """Where the http report goes: ``--json`` as given, unless that is the load benchmarks'
    default (then :data:`DEFAULT_JSON`) or their report is written too (then beside it)."""
    if given == LOAD_DEFAULT_JSON:
        return DEFAULT_JSON
    if mixed:
        path = Path(given)
        return str(path.with_name(f"{path.stem}_http{path.suffix or '.json'}"))
    return given


def bench_command(args: argparse.Namespace) -> int:
    """``conclave bench``: the ``http`` scenario here, the others by :mod:`load_bench`."""
    scenarios = args.scenario or list(DEFAULT_SCENARIOS)
    others = [s for s in scenarios if s != "http"]
    if others:
        code = load_bench_main(args=argparse.Namespace(**{**vars(args), "scenario": others}))
        if code:
            return code
    if "http" not in scenarios:
        return 0
    report = _report_path(args.json, mixed=bool(others))
    for check, value in ((check_report_path, report), (check_log_root, args.log_root)):
        problem = check(value)
        if problem:
            print(f"conclave bench: {problem}", file=sys.stderr)
            return 2
    sizes = SIZES[:1] if args.quick else SIZES
    try:
        run_http_bench(sizes, Path(report), Path(args.log_root))
    except ReportPathChanged as exc:
        print(f"conclave bench: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.http_bench", description=__doc__
    )
    add_bench_arguments(parser)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    tune_gc_for_actors()
    if args.client:
        case = Case(**json.loads(args.client))
        print(json.dumps(client(case, args.url, Path(args.log_root))))
        return 0
    return bench_command(argparse.Namespace(**{**vars(args), "scenario": ["http"]}))


if __name__ == "__main__":
    raise SystemExit(main())
