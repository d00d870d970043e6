"""What the event log costs a big run in instructions, counted by Valgrind: a figure the
machine's drift cannot move.

The timed row (``load_bench.measure_log_cost``) compares CPU seconds, and on a shared VM one
pair of adjacent runs read anywhere from -19 % to +55 % for the same code: fifteen pairs
still left its verdict a coin toss near the 15 % target. Cachegrind counts the instructions
a process executes (user space; ``--cache-sim=no``), whatever the load: with the hash seed
fixed (``PYTHONHASHSEED=0``) only what a run writes varies (timestamps, directory names), and
the cost of 200 agents read +12.8 % and +12.4 % in two checkouts. A run's count is that of a
process making two runs less that of one making one, so imports, compiling and the first
run's warm-up cancel out.

What it leaves out, and the timed row keeps: the kernel's time for the log's writes (about
1 % of such a run's CPU here) and what memory traffic costs beyond instructions. Under
Valgrind a run is some 40-80 times slower: 200 agents in ``--quick`` (about a minute on two
cores), 1,000 otherwise.

Run as a program with ``--child AGENTS on|off RUNS`` it is the counted process.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

__all__ = ["VALGRIND_MISSING", "instruction_row", "measure_log_instructions", "read_refs"]

VALGRIND_MISSING = "valgrind is not installed (apt-get install valgrind)"
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_TIMEOUT_S = 3_600.0
"""A counted process is killed past this: a stuck one must not hold the benchmark forever."""


def read_refs(report: str) -> int:
    """The instruction count in cachegrind's report (its stderr). Raises ``ValueError``,
    quoting the report's end, when there is none (the counted process failed)."""
    found = _REFS.search(report)
    if found is None:
        raise ValueError(f"no instruction count in valgrind's report: {report[-400:]!r}")
    return int(found.group(1).replace(",", ""))


def instruction_row(
    agents: int, counts: dict[tuple[bool, int], int], target: float
) -> dict[str, Any]:
    """The row for ``counts``: (logged, runs) -> instructions of a process making that
    many runs. A run's figure is two runs' count less one's."""
    off = counts[False, 2] - counts[False, 1]
    on = counts[True, 2] - counts[True, 1]
    cost = round(on / off - 1, 4)
    return {
        "agents": agents,
        "latency": 0.0,
        "visibility": "ring",
        "instructions_off_m": round(off / 1e6, 1),
        "instructions_on_m": round(on / 1e6, 1),
        "log_cost_instructions": f"{cost:+.1%}",
        "target": f"<= {target:.0%}",
        "met": cost <= target,
    }


def measure_log_instructions(agents: int, target: float) -> dict[str, Any]:
    """The row for runs of ``agents`` (ring, L = 0), or one that says why there is none."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return {"agents": agents, "error": VALGRIND_MISSING}
    plan = [(logged, runs) for logged in (False, True) for runs in (1, 2)]
    with ThreadPoolExecutor(max_workers=max(1, min(len(plan), os.cpu_count() or 1))) as pool:
        found = pool.map(partial(_count, valgrind, agents), plan)
        counts = dict(zip(plan, found, strict=True))
    return instruction_row(agents, counts, target)


def _count(valgrind: str, agents: int, plan: tuple[bool, int]) -> int:
    logged, runs = plan
    command = [
        valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, "-m", "conclave.benchmarks.log_instructions",
        "--child", str(agents), "on" if logged else "off", str(runs),
    ]  # fmt: skip
    done = subprocess.run(
        command,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"the counted process failed (exit {done.returncode}): {done.stderr[-400:]!r}"
        )
    return read_refs(done.stderr)


def _child(agents: int, logged: bool, runs: int) -> None:
    """The counted process: ``runs`` big runs, each in its own ``trio.run``, as the timed
    row makes them. Imported here: ``load_bench`` imports this module."""
    import trio

    from conclave.actors.run.driver import RunSpec, run
    from conclave.benchmarks.load_bench import TASK, Case
    from conclave.runtime.gc_tuning import tune_gc_for_actors

    tune_gc_for_actors()
    config = Case(agents=agents, latency=0.0, visibility="ring").config()
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(runs):
            log_dir = Path(tmp) / f"run{index}" if logged else None
            trio.run(partial(run, RunSpec(task=TASK, config=config, log_dir=log_dir)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="log_instructions", description=__doc__)
    parser.add_argument("--child", nargs=3, metavar=("AGENTS", "ON_OFF", "RUNS"))
    parser.add_argument("--agents", type=int, default=1_000)
    args = parser.parse_args(argv)
    if args.child:
        agents, on_off, runs = args.child
        _child(int(agents), on_off == "on", int(runs))
        return 0
    from conclave.benchmarks.load_bench import LOG_COST_TARGET

    print(measure_log_instructions(args.agents, LOG_COST_TARGET))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
