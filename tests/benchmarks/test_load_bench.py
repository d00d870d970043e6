"""The load benchmarks' own machinery: what they count must be what happened."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conclave.benchmarks import load_bench
from conclave.benchmarks.load_bench import (
    _batch_configs,
    _counter,
    _log_scratch,
    _run_batch,
    measure_batch,
)
from conclave.benchmarks.machine import filesystem_of


async def test_batch_lanes_run_every_run_exactly_once(autojump_clock: object) -> None:
    configs = _batch_configs(7, latency=0.2)
    claimed: list[int] = []
    counter = _counter(len(configs))

    def claim() -> int | None:
        i = counter()
        if i is not None:
            claimed.append(i)
        return i

    durations = await _run_batch(configs, 3, None, claim)

    assert sorted(claimed) == list(range(7))
    assert len(durations) == 7
    assert all(d > 0 for d in durations)


def _nonempty_logs(root: Path) -> list[str]:
    return sorted(p.parent.name for p in root.glob("*/events.jsonl") if p.stat().st_size)


async def test_batch_lanes_write_one_event_log_per_run(
    autojump_clock: object, tmp_path: Path
) -> None:
    await _run_batch(_batch_configs(3, latency=0.0), 2, tmp_path, _counter(3))

    assert _nonempty_logs(tmp_path) == ["run0", "run1", "run2"]


def test_worker_processes_share_the_batch_between_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the workers' scratch logs go under .conclave/bench here

    row = measure_batch(runs=8, concurrency=4, latency=0.0, workers=2)

    assert sum(row["runs_by_worker"]) == 8
    assert all(n >= 2 for n in row["runs_by_worker"])  # each filled its two lanes at least
    assert row["runs_per_s"] > 0
    assert 0 < row["zero_cost_fraction"] <= 1
    assert not any((tmp_path / load_bench.LOG_ROOT).iterdir())  # scratch cleaned up


def test_a_worker_that_dies_fails_the_batch_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".conclave").write_text("a file where the workers' log directory should go")

    with pytest.raises(RuntimeError, match="exit code 1"):
        measure_batch(runs=4, concurrency=2, latency=0.0, workers=2)


def test_filesystem_of_names_the_mount_holding_a_path(tmp_path: Path) -> None:
    # Linux always has a root mount, so the answer is a real filesystem type.
    assert filesystem_of(tmp_path) not in ("", "unknown")


def test_log_scratch_lives_under_the_chosen_root_and_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONCLAVE_BENCH_SCRATCH", raising=False)
    root = tmp_path / "logs"
    with _log_scratch(root) as scratch:
        assert scratch.parent == root
        assert scratch.is_dir()
    assert list(root.iterdir()) == []


def test_the_storm_measures_the_inject_policy_and_says_it_runs_as_finish_without_tools() -> None:
    [label] = [label for label, policy, _ in load_bench.STORM_POLICIES if policy == "inject"]

    row = load_bench.measure_storm(3, label, "inject", None, True, seeds=1)

    assert "as finish" in row["policy"]
    assert row["llm_requests_median"] >= 2 * 3 + 1
    assert row["met"]


def test_the_log_cost_compares_runs_with_and_without_their_event_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    row = load_bench.measure_log_cost(agents=3, repeats=1)

    assert row["event_log_mb"] > 0  # the logged runs wrote a log
    assert row["all_completed"]
    assert row["log_cost_cpu"] == f"{round(row['cpu_on_s'] / row['cpu_off_s'] - 1, 3):+.1%}"
    estimates = [float(row[k].rstrip("%")) / 100 for k in ("log_cost_cpu", "log_cost_cpu_paired")]
    assert row["met"] == all(e <= load_bench.LOG_COST_TARGET for e in estimates)
    assert row["target"] == "<= 15%"


def test_the_log_cost_pairs_adjacent_runs_and_needs_both_estimates_at_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # CPU seconds in the order measured: the warm-up, then pairs (on, off), (off, on), (on, off).
    steady = [1.0, 1.3, 1.0, 1.0, 1.0, 1.0, 1.0]
    # Two of three pairs say the log costs +20 %; the machine's speed moved between and
    # within pairs, and the medians' ratio alone (1.2 s on, 2.0 s off) says -40 %.
    drifting = [1.0, 1.2, 1.0, 2.0, 2.4, 1.0, 2.0]
    cpus = iter(steady + drifting)

    def timed(config: object, log_dir: object, failures: list[str]) -> Any:
        cpu = next(cpus)
        result = SimpleNamespace(termination="completed")
        return load_bench._Measured(wall=cpu, cpu=cpu, result=result, log_bytes=1)  # type: ignore[arg-type]

    monkeypatch.setattr(load_bench, "_timed_run", timed)

    calm = load_bench.measure_log_cost(agents=3, repeats=3)
    drifted = load_bench.measure_log_cost(agents=3, repeats=3)

    assert (calm["log_cost_cpu"], calm["log_cost_cpu_paired"], calm["met"]) == (
        "+0.0%",
        "+0.0%",
        True,
    )
    assert (drifted["log_cost_cpu"], drifted["log_cost_cpu_paired"], drifted["met"]) == (
        "-40.0%",
        "+20.0%",
        False,
    )


def test_a_big_run_with_a_target_says_it_and_whether_it_was_met(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(load_bench.BIG_TARGETS, (3, 0.2, "ring"), 100.0)

    row = load_bench.measure_big_run(load_bench.Case(agents=3, latency=0.2, visibility="ring"))

    assert row["target"] == "<= 100.0"
    assert row["met"] is True
    assert row["cpu_s"] > 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _two_cases() -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    return [("first", lambda: {"case": 1}), ("second", lambda: {"case": 2})]


def test_progress_into_a_file_is_one_plain_line_per_finished_case() -> None:
    stream = io.StringIO()

    rows = load_bench._run_all(_two_cases(), stream)

    assert rows == [{"case": 1}, {"case": 2}]
    assert stream.getvalue() == "1/2 first\n2/2 second\n"


def test_progress_on_a_terminal_is_a_bar_redrawn_in_place() -> None:
    stream = _Terminal()

    load_bench._run_all(_two_cases(), stream)

    frames = stream.getvalue()
    assert frames.count("\r") == 3
    assert frames.endswith("\n")
    assert "2/2 done" in frames
