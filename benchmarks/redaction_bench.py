"""What redacting a run's secrets costs: per call of the redactor, and on a whole run.

* **per call**: the run's :class:`~actors.llm.redaction.Redactor` with 1, 4 and 16 secrets
  over texts of an event line's size (200 bytes), a tool result's (2 KB) and the largest
  result the model is shown (30 KB), none holding a secret (the common case).
* **run**: one scripted run of N agents (latency 0, ring visibility, refinement off: each
  agent lists its workspace once with a tool, answers once and votes once; everything is
  runtime work), with its event log and transcripts, in two arms run in fresh processes
  (the keys a process holds are process-wide), interleaved: **no secrets** (nothing is
  wrapped: the run is as it was before redaction existed, but for the walk of its config for
  secrets, timed apart) and **K secrets** (K keys held as ``Secret``: every reply and tool result
  passes the redactor). The second arm also times every redactor call, so its cost is given
  per call and per line written (event log and transcripts), beside the CPU time of both
  arms (medians of the repeats; wall time is shown too, which a shared machine inflates).

    .venv/bin/python -m conclave.benchmarks.redaction_bench [--agents N] [--repeats R]
        [--secrets K] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import trio

from conclave.actors.llm.redaction import Redactor
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.redaction import secrets_of_run
from conclave.benchmarks.machine import machine_info
from conclave.config.modes import ModeState, apply_modes
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.backends import ToolStep
from conclave.config.secret import Secret
from conclave.runtime.gc_tuning import tune_gc_for_actors

__all__ = ["main"]

TASK = "Propose a plan to cut the build time of a large monorepo in half."
SIZES = {"event line (200 B)": 200, "tool result (2 KB)": 2_000, "largest result (30 KB)": 30_000}
SECRET_COUNTS = (1, 4, 16)


def _secret(i: int) -> str:
    return f"zq-bench-secret-{i:04d}-0123456789abcdef0123"


def _text(size: int) -> str:
    line = "agent a00042 answered: cut the build graph, cache remote artifacts, shard tests. "
    return (line * (size // len(line) + 1))[:size]


def measure_per_call() -> list[dict[str, Any]]:
    rows = []
    for count in SECRET_COUNTS:
        redactor = Redactor(_secret(i) for i in range(count))
        for name, size in SIZES.items():
            number = 20_000 if size < 10_000 else 2_000
            timer = timeit.Timer(partial(redactor, _text(size)))
            best = min(timer.repeat(number=number, repeat=5))
            rows.append({"secrets": count, "text": name, "us_per_call": best / number * 1e6})
    return rows


def _config(agents: int) -> ConclaveConfig:
    look = ToolStep(tool="list_directory", arguments={"path": "."})
    members = tuple(
        AgentConfig(
            id=f"a{i:05d}",
            backend=ScriptedBackendConfig(seed=i, latency=0.0, tool_steps=(look,)),
        )
        for i in range(agents)
    )
    orchestrator = OrchestratorConfig(visibility="ring", quiet_period=None, tools=True)
    config = ConclaveConfig(agents=members, orchestrator=orchestrator)
    return apply_modes(config, ModeState(refinement=False))


class _Timed(Redactor):
    """The redactor, timing every call (the arm with secrets only)."""

    calls = 0
    seconds = 0.0

    def __call__(self, text: str) -> str:
        started = time.perf_counter()
        try:
            return super().__call__(text)
        finally:
            _Timed.calls += 1
            _Timed.seconds += time.perf_counter() - started


def run_arm(agents: int, secrets: int) -> dict[str, Any]:
    """One run in this process: ``secrets`` keys held first (0: none)."""
    import conclave.actors.run.redaction as entry

    for i in range(secrets):
        Secret(_secret(i))
    if secrets:
        setattr(entry, "Redactor", _Timed)  # noqa: B010 (patched: only this process runs)
    tune_gc_for_actors()
    config = _config(agents)
    with tempfile.TemporaryDirectory(prefix="conclave-redaction-bench-") as scratch:
        log_dir = Path(scratch) / "run"
        spec = RunSpec(task=TASK, config=config, log_dir=log_dir)
        wall, cpu = time.perf_counter(), time.process_time()
        result = trio.run(run, spec)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        lines = sum(
            len(path.read_bytes().splitlines())
            for path in (log_dir / "events.jsonl", log_dir / "transcripts.jsonl")
        )
    return {
        "termination": result.termination.value,
        "wall_s": wall,
        "cpu_s": cpu,
        "lines_written": lines,
        "redactor_calls": _Timed.calls,
        "redactor_s": _Timed.seconds,
    }


def _arm_in_subprocess(agents: int, secrets: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "conclave.benchmarks.redaction_bench",
            "--arm",
            json.dumps({"agents": agents, "secrets": secrets}),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def measure_run(agents: int, repeats: int, secrets: int) -> dict[str, Any]:
    arms: dict[int, list[dict[str, Any]]] = {0: [], secrets: []}
    for repeat in range(repeats):
        # ABBA: a run pays for the files the one before it deleted, so neither arm always
        # comes second.
        for count in (0, secrets) if repeat % 2 == 0 else (secrets, 0):
            arms[count].append(_arm_in_subprocess(agents, count))
    config = _config(agents)
    walk = min(timeit.repeat(lambda: secrets_of_run(config), number=1, repeat=5))
    report: dict[str, Any] = {
        "agents": agents,
        "repeats": repeats,
        "secrets": secrets,
        "config_walk_ms": walk * 1e3,
    }
    for count, runs in arms.items():
        name = "no_secrets" if count == 0 else "with_secrets"
        report[name] = {
            "termination": sorted({r["termination"] for r in runs}),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            "lines_written": statistics.median(r["lines_written"] for r in runs),
            "redactor_calls": statistics.median(r["redactor_calls"] for r in runs),
            "redactor_s": statistics.median(r["redactor_s"] for r in runs),
        }
    timed = report["with_secrets"]
    calls, lines = timed["redactor_calls"], timed["lines_written"]
    report["redactor_us_per_call"] = timed["redactor_s"] / calls * 1e6 if calls else 0.0
    report["redactor_us_per_line_written"] = timed["redactor_s"] / lines * 1e6 if lines else 0.0
    report["redactor_share_of_cpu"] = timed["redactor_s"] / timed["cpu_s"]
    return report


def format_report(per_call: list[dict[str, Any]], whole: dict[str, Any]) -> str:
    out = ["redactor, per call (no secret in the text):", ""]
    out.append(f"{'secrets':>8}  {'text':<24} {'us/call':>8}")
    for row in per_call:
        out.append(f"{row['secrets']:>8}  {row['text']:<24} {row['us_per_call']:>8.2f}")
    out += ["", f"a run of {whole['agents']} agents, medians of {whole['repeats']}:", ""]
    out.append(f"{'arm':<16} {'cpu s':>7} {'wall s':>7} {'lines':>7} {'calls':>7}")
    for name in ("no_secrets", "with_secrets"):
        arm = whole[name]
        out.append(
            f"{name:<16} {arm['cpu_s']:>7.2f} {arm['wall_s']:>7.2f} "
            f"{arm['lines_written']:>7.0f} {arm['redactor_calls']:>7.0f}"
        )
    out += [
        "",
        f"redactor with {whole['secrets']} secrets: {whole['redactor_us_per_call']:.2f} us per "
        f"call, {whole['redactor_us_per_line_written']:.2f} us per line written, "
        f"{whole['redactor_share_of_cpu']:.2%} of the run's CPU time",
        f"finding the run's secrets in its config (every run, both arms): "
        f"{whole['config_walk_ms']:.1f} ms",
    ]
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="redaction_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=1_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--secrets", type=int, default=4)
    p.add_argument("--json", default="bench-results/redaction_bench.json", metavar="PATH")
    p.add_argument("--arm", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.arm is not None:
        arm = json.loads(args.arm)
        print(json.dumps(run_arm(arm["agents"], arm["secrets"])))
        return 0
    per_call = measure_per_call()
    whole = measure_run(args.agents, args.repeats, args.secrets)
    print(format_report(per_call, whole))
    report = {"machine": machine_info(), "per_call": per_call, "run": whole}
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
