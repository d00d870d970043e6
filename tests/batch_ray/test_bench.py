"""The workers-versus-Ray batch benchmark, tiny: it runs the real command on both engines
(Ray on a local cluster of the command's own) and its figures are what happened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conclave.benchmarks import batch_ray_bench
from tests.batch_ray.helpers import ray_processes, wait_until_gone

# Every Ray spec runs on the same xdist worker, one at a time: they count the machine's Ray
# processes, and a cluster another spec started meanwhile would look left behind.
pytestmark = pytest.mark.xdist_group("ray")


def test_the_ray_bench_runs_the_same_batch_on_workers_and_on_ray(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = ray_processes()
    out = tmp_path / "report.json"

    code = batch_ray_bench.main(["--runs", "6", "--concurrency", "2", "--json", str(out)])

    report = json.loads(out.read_text())
    rows = report["rows"]
    assert [row["engine"] for row in rows] == ["workers", "ray"]
    assert [row["completed"] for row in rows] == [6, 6]
    assert all(0 < row["runs_wall_s"] < row["process_wall_s"] for row in rows)
    assert [row["processes"] for row in rows] == [None, 2]  # a Ray host per CPU of 2
    figure = report["issue_28"]
    assert (figure["filed"], figure["target"]) == (0.49, ">= 0.9")
    assert figure["now"] == rows[1]["fraction_of_ideal"]
    assert code == (0 if figure["met"] else 1)
    shown = capsys.readouterr().out
    assert "fraction_of_ideal" in shown and "issue 28's figure" in shown
    assert not any((tmp_path / ".conclave" / "bench").iterdir())  # scratch removed
    wait_until_gone(before)


def _row(engine: str, fraction: float, overhead: float) -> dict[str, Any]:
    return {"engine": engine, "fraction_of_ideal": fraction, "overhead_s": overhead}


def test_the_figure_is_the_median_of_the_rounds_against_the_baselines() -> None:
    rows = [_row("ray-baseline", 0.5, 20.0), _row("ray", 0.9, 5.0),
            _row("ray", 0.95, 4.0), _row("ray-baseline", 0.6, 30.0),
            _row("ray", 0.7, 6.0), _row("workers", 0.99, 1.0)]  # fmt: skip

    figure = batch_ray_bench.issue_figure(rows)

    assert figure is not None
    assert (figure["baseline"], figure["now"], figure["met"]) == (0.55, 0.9, True)
    assert (figure["baseline_overhead_s"], figure["overhead_s"]) == (25.0, 5.0)
    assert batch_ray_bench.issue_figure([_row("workers", 0.99, 1.0)]) is None


def test_a_baseline_that_is_not_a_conclave_tree_is_refused_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        batch_ray_bench.main(["--baseline", str(tmp_path), "--json", str(tmp_path / "r.json")])

    assert exited.value.code == 2
    assert "no conclave/__init__.py there" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
