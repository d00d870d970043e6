"""The tracker benchmark runs, tiny, and reports what it says it reports (not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import tracker_bench


def test_a_tiny_run_reports_every_measure() -> None:
    report = tracker_bench.run_benchmark(files=60, repeats=1)
    assert [r["measure"] for r in report["rows"]] == list(tracker_bench.MEASURES)
    assert all(r["median_ms"] > 0 for r in report["rows"])
    assert report["parameters"]["files"] == 60


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tracker.json"
    code = tracker_bench.main(["--files", "60", "--repeats", "1", "--json", str(out)])
    assert code == 0
    assert json.loads(out.read_text())["benchmark"] == "tracker_bench"
    assert "tracker_bench: a tree of 60 files" in capsys.readouterr().out


def test_main_refuses_a_report_path_that_is_a_directory(tmp_path: Path) -> None:
    assert tracker_bench.main(["--files", "60", "--json", str(tmp_path)]) == 2
