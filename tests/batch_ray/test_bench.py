"""The workers-versus-Ray batch benchmark, tiny: it runs the real command on both engines
(Ray on a local cluster of the command's own) and its figures are what happened."""

from __future__ import annotations

import json
from pathlib import Path

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

    rows = batch_ray_bench.run_bench(6, [2], ["workers", "ray"], out, latency=0.01)

    assert [row["engine"] for row in rows] == ["workers", "ray"]
    assert [row["completed"] for row in rows] == [6, 6]
    assert all(0 < row["runs_wall_s"] < row["process_wall_s"] for row in rows)
    assert json.loads(out.read_text())["rows"] == rows
    assert "fraction_of_ideal" in capsys.readouterr().out
    assert not any((tmp_path / ".conclave" / "bench").iterdir())  # scratch removed
    wait_until_gone(before)
