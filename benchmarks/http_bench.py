"""``conclave bench --scenario http``: the big run with every agent on the ``openai`` backend.

The same run as the ``big`` scenario's (N agents answer, see each other's answers, vote; a
winner presents), but each agent talks to an OpenAI-compatible server on loopback through the
real SDK over real sockets. The server (:mod:`benchmarks.http_server`) runs in its own process
and answers as the scripted backend would, after 200 ms ±50 %, so the run coordinates as a
scripted one does and only the client's cost is added.

Each case runs its client in a fresh process, so its figures are its own:

* ``process_wall_s``: from spawning the process to its exit, start-up and imports included
  (the SDK's too): what a user waits for ``conclave run`` with N agents;
* ``wall_s``: the run itself, the SDK already imported; ``ideal_s``: the same run on the
  scripted backend on a virtual clock, where runtime work takes no time (the critical path
  of LLM latencies), and ``wall_over_ideal``;
* ``requests``: HTTP requests the server answered; ``scripted_requests``: LLM calls of the
  scripted run (the target is the same count);
* ``client_cpu_ms_per_request``: the client's CPU during the run over the requests;
* ``peak_rss_mb``: the client process's peak resident memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.run.driver import RunSpec, run
from benchmarks.bench_args import (
    ReportPathChanged,
    add_bench_arguments,
    check_log_root,
    check_report_path,
    write_report,
)
from benchmarks.http_server import model_name
from benchmarks.load_bench import TASK, Case, _log_scratch, _table, _virtual
from benchmarks.load_bench import main as load_bench_main
from benchmarks.machine import machine_info, peak_rss_kb
from config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from config.schema.openai import OpenAIBackendConfig
from config.secret import Secret
from runtime.gc_tuning import tune_gc_for_actors

__all__ = [
    "SIZES",
    "TARGETS",
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
TARGETS = {
    "process_wall_s": (50, 1.5),
    "peak_rss_mb": (50, 120.0),
    "client_cpu_ms_per_request": (None, 2.0),
}
"""Column → (the N it applies to, ``None`` for every N; the most it may be)."""


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


@attrs.frozen(kw_only=True)
class ServerProcess:
    url: str
    """The OpenAI API root (``http://127.0.0.1:PORT/v1``)."""
    process: subprocess.Popen[bytes]

    def stats(self) -> dict[str, Any]:
        """What the server has served so far (``GET /stats``)."""
        from urllib.request import urlopen

        root = self.url.removesuffix("/v1")
        with urlopen(f"{root}/stats", timeout=10) as response:
            data: dict[str, Any] = json.loads(response.read())
        return data


@contextlib.contextmanager
def open_server_process(
    latency: float = LATENCY, jitter: float = JITTER
) -> Iterator[ServerProcess]:
    """The scripted server in its own process for the duration of the block; it exits when
    its stdin closes, so it cannot outlive the block (or this process)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.http_server",
            f"--latency={latency}",
            f"--jitter={jitter}",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip():
            raise RuntimeError(f"the benchmark server failed to start (exit {process.wait()})")
        yield ServerProcess(url=f"http://127.0.0.1:{int(line)}/v1", process=process)
    finally:
        assert process.stdin is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(case: Case, base_url: str, log_root: Path) -> dict[str, Any]:
    """One run in this process, as the client being measured: the SDK imported first (its
    cost shows in the process wall, not the run's), then the run with its event log."""
    started = time.time()
    import actors.llm.openai_backend  # noqa: F401  (imported by the pool on first use anyway)

    imported = time.time()
    config = http_config(case, base_url)
    with _log_scratch(log_root) as tmp:
        cpu = time.process_time()
        began = time.perf_counter()
        result = trio.run(run, RunSpec(task=TASK, config=config, log_dir=tmp / "run"))
        wall = time.perf_counter() - began
        cpu = time.process_time() - cpu
    return {
        "run_started_at": imported,
        "sdk_import_s": round(imported - started, 3),
        "termination": str(result.termination.value),
        "wall_s": wall,
        "cpu_s": cpu,
        "llm_calls": result.llm_calls,
        "failed_agents": len(result.failed_agents),
        "peak_rss_kb": peak_rss_kb(),
    }


def measure(case: Case, log_root: Path) -> dict[str, Any]:
    """One case: a fresh server, the client in a fresh process, then the scripted ideal."""
    with open_server_process() as server:
        spawned = time.time()
        began = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable, "-m", "benchmarks.http_bench",
                "--client", json.dumps(attrs.asdict(case)),
                "--url", server.url, "--log-root", str(log_root),
            ],
            check=True,
            capture_output=True,
            text=True,
        )  # fmt: skip
        process_wall = time.perf_counter() - began
        served = server.stats()
    got = json.loads(out.stdout)
    scripted, ideal = _virtual(case)
    requests = served["requests"]
    return {
        "agents": case.agents,
        "visibility": case.visibility,
        "refinement": case.refinement,
        "termination": got["termination"],
        "process_wall_s": round(process_wall, 3),
        "startup_s": round(got["run_started_at"] - spawned, 3),
        "sdk_import_s": got["sdk_import_s"],
        "wall_s": round(got["wall_s"], 3),
        "ideal_s": round(ideal, 3),
        "wall_over_ideal": round(got["wall_s"] / ideal, 2),
        "requests": requests,
        "llm_calls": got["llm_calls"],
        "scripted_requests": scripted.llm_calls,
        "server_errors": served["errors"],
        "connections": served["connections"],
        "client_cpu_ms_per_request": round(got["cpu_s"] / max(requests, 1) * 1000, 2),
        "peak_rss_mb": round(got["peak_rss_kb"] / 1024, 1),
        "failed_agents": got["failed_agents"],
    }


def targets_met(row: dict[str, Any]) -> dict[str, bool]:
    """Each target that applies to the row's N, and whether the row meets it (the request
    count must equal the scripted run's)."""
    met = {
        column: row[column] <= limit
        for column, (n, limit) in TARGETS.items()
        if n is None or n == row["agents"]
    }
    met["requests"] = row["requests"] == row["scripted_requests"]
    return met


COLUMNS = (
    "agents", "visibility", "process_wall_s", "startup_s", "sdk_import_s", "wall_s", "ideal_s",
    "wall_over_ideal", "requests", "scripted_requests", "client_cpu_ms_per_request",
    "peak_rss_mb", "server_errors", "failed_agents", "missed",
)  # fmt: skip


def run_http_bench(sizes: Sequence[int], out: Path, log_root: Path) -> dict[str, Any]:
    rows = []
    for n in sizes:
        print(f"http N={n} ...", file=sys.stderr, flush=True)
        row = measure(case_for(n), log_root)
        row["missed"] = ",".join(k for k, ok in targets_met(row).items() if not ok) or None
        rows.append(row)
    load = os.getloadavg()
    report = {
        "machine": machine_info(),
        "load_average": [round(x, 2) for x in load],
        "latency": f"{LATENCY * 1000:.0f} ms ±{JITTER:.0%}",
        "targets": {k: {"agents": n, "at_most": limit} for k, (n, limit) in TARGETS.items()},
        "scenarios": {"http": rows},
    }
    title = (
        f"one big run on the openai backend against a loopback server in its own process "
        f"(L = {LATENCY * 1000:.0f} ms ±{JITTER:.0%}; ideal = the scripted run, virtual clock; "
        f"load average {load[0]:.2f})"
    )
    print(_table(title, rows, COLUMNS))
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
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_bench", description=__doc__)
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
