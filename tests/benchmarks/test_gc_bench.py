"""The collector benchmark's own machinery: what it counts must be what happened."""

from __future__ import annotations

import gc
from pathlib import Path

import trio

from conclave.benchmarks.gc_bench import GcPasses, left_in_cycles, steady_runs
from conclave.benchmarks.load_bench import Case


def test_gc_passes_count_the_objects_a_pass_frees() -> None:
    class Node:
        def __init__(self) -> None:
            self.itself = self

    gc.collect()
    with GcPasses() as passes:
        for _ in range(10):
            Node()
        gc.collect()

    assert passes.passes == 1
    assert passes.full_passes == 1
    assert passes.collected >= 10
    assert passes not in gc.callbacks


async def test_each_steady_run_is_one_row_with_its_cpu(
    autojump_clock: object, tmp_path: Path
) -> None:
    config = Case(agents=3, latency=0.2, visibility="ring").config()

    rows = await steady_runs(config, 2, tmp_path)

    assert [row["run"] for row in rows] == [0, 1]
    assert all(row["termination"] == "completed" and row["cpu_s"] > 0 for row in rows)
    assert list(await trio.Path(tmp_path).iterdir()) == []  # each run's log is removed at its end


async def test_runs_after_the_first_leave_nothing_in_cycles_for_the_probe_to_free(
    autojump_clock: object, tmp_path: Path
) -> None:
    config = Case(agents=3, latency=0.2, visibility="ring").config()

    found = await left_in_cycles(config, 3, tmp_path)

    # The process's first run may build a few classes lazily (attrs leaves cycles doing so).
    assert len(found) == 3
    assert found[1:] == [0, 0]
