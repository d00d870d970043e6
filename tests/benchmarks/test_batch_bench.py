"""The ``conclave batch`` benchmark, tiny: it runs the real command and its figures are
what happened."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import trio
import yaml

from conclave.benchmarks import batch_bench
from conclave.config.loader import load_config
from conclave.ui.batch.tasks import apply_overrides


def test_the_batch_bench_runs_conclave_batch_and_reports_its_rate_against_the_ideal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # its scratch goes under .conclave/bench here
    out = tmp_path / "report.json"

    [row] = batch_bench.run_bench([(6, 3, 1)], out, latency=0.01)

    assert row["completed"] == 6
    assert row["ideal_runs_per_s"] == pytest.approx(3 / row["ideal_run_latency_s"], abs=0.2)
    assert row["runs_per_s"] > 0
    assert row["fraction_of_ideal"] > 0
    # No engine beats one that costs nothing, and that one cannot keep C runs always going.
    assert row["runs_per_s"] <= row["zero_cost_runs_per_s"] <= row["ideal_runs_per_s"]
    assert row["fraction_of_zero_cost"] >= row["fraction_of_ideal"]
    # The same batch on a core of its own: only what the engine costs keeps it from 1.
    assert 0 < row["fraction_on_own_core"] <= 1
    assert row["runs_wall_s"] < row["process_wall_s"]
    assert 0 < row["process_cpu_s"] < row["process_wall_s"] * (os.cpu_count() or 1)
    assert row["load_1min"] >= 0  # the machine's load as it started: the rates depend on it
    assert json.loads(out.read_text())["rows"] == [row]
    assert "fraction_of_ideal" in capsys.readouterr().out
    assert not any((tmp_path / ".conclave" / "bench").iterdir())  # scratch removed


def test_the_full_settings_are_the_load_benchs_batch_settings() -> None:
    rows = batch_bench.settings(quick=False)

    assert rows[:2] == [(1_000, 50, 1), (1_000, 200, 1)]


def test_both_settings_measure_issue_24s_batch_figure() -> None:
    assert batch_bench.settings(quick=True) == [batch_bench.ISSUE_24] == [(100, 50, 1)]
    assert batch_bench.ISSUE_24 in batch_bench.settings(quick=False)


def _row(runs: int, concurrency: int, fraction: float) -> dict[str, object]:
    return {
        "runs": runs,
        "concurrency": concurrency,
        "workers": 1,
        "fraction_of_ideal": round(fraction * 0.95, 2),
        "fraction_of_zero_cost": fraction,
    }


def test_issue_24s_figure_is_the_fraction_of_a_zero_cost_engine_beside_the_filed_one() -> None:
    figure = batch_bench.issue_figure([_row(1_000, 50, 0.5), _row(100, 50, 0.8)])

    assert figure is not None
    assert (figure["filed"], figure["target"], figure["now"]) == (0.7, ">= 0.9", 0.8)
    assert figure["now_of_c_over_latency"] == 0.76
    assert figure["met"] is False
    met = batch_bench.issue_figure([_row(100, 50, 0.9)])
    assert met is not None and met["met"] is True


def test_a_zero_cost_engine_takes_longer_than_c_over_the_mean_latency_says(
    tmp_path: Path,
) -> None:
    """The tail: in the last wave lanes fall idle one by one, and the batch ends with its
    slowest run (the reason the issue's figure is measured against this wall time)."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(batch_bench._config_data(0.2)), encoding="utf-8")

    wall = batch_bench.zero_cost_wall(config, 20, 10)
    mean = batch_bench.ideal_latency(config, 20)

    assert wall > 20 * mean / 10 * 1.01  # 1.02 with these seeds


def test_without_its_setting_there_is_no_issue_figure() -> None:
    assert batch_bench.issue_figure([_row(1_000, 50, 0.95)]) is None


def _config_file(tmp_path: Path) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(batch_bench._config_data(0.2)), encoding="utf-8")
    return config


def test_a_runs_latency_in_the_bench_does_not_depend_on_the_runs_beside_it(
    tmp_path: Path,
) -> None:
    """Each run has seeds of its own: with one seed for all, runs drew their jitter from
    shared streams in the order their calls came, so the batch ``conclave batch`` ran was
    not the one the zero-cost engine ran."""
    config = _config_file(tmp_path)

    alone, _ = batch_bench._virtual_batch(config, 6, 1)
    together, _ = batch_bench._virtual_batch(config, 6, 6)

    assert together == pytest.approx(alone)


def test_each_task_line_runs_the_config_the_zero_cost_engine_runs(tmp_path: Path) -> None:
    config = load_config(_config_file(tmp_path))

    line = batch_bench._task_line(7, 0.2)
    as_batch_runs_it = apply_overrides(config, line["overrides"])

    assert as_batch_runs_it == batch_bench._run_config(config, 7)
    assert as_batch_runs_it != batch_bench._run_config(config, 8)


def test_on_the_cpu_clock_a_wait_takes_no_real_time_and_work_takes_its_cpu_time() -> None:
    async def wait_then_work() -> tuple[float, float, float]:
        started = trio.current_time()
        await trio.sleep(100)
        waited = trio.current_time()
        cpu = time.process_time()
        while time.process_time() - cpu < 0.05:
            pass
        return started, waited, trio.current_time()

    real = time.perf_counter()
    started, waited, worked = trio.run(wait_then_work, clock=batch_bench.CpuClock())

    assert time.perf_counter() - real < 5
    assert 100 <= waited - started < 100.05
    assert worked - waited == pytest.approx(0.05, abs=0.02)
