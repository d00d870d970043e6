"""The tools benchmark runs, tiny, and reports what it says it reports (not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import tools_bench


def test_a_tiny_run_reports_every_measure() -> None:
    report = tools_bench.run_benchmark(calls=3, repeats=1)
    assert [r["measure"] for r in report["rows"]] == [
        "executor, no-op tool",
        "path policy, read",
        "path policy, write",
        "verified open",
        "plain open",
        "read_file, end to end",
        "plain read",
    ]
    assert all(r["median_ms"] > 0 for r in report["rows"])
    assert isinstance(report["met"], bool)
    assert report["overhead_ms"] >= report["rows"][0]["median_ms"]


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tools.json"
    code = tools_bench.main(["--calls", "2", "--repeats", "1", "--json", str(out)])
    report = json.loads(out.read_text())
    assert report["benchmark"] == "tools_bench"
    assert report["parameters"] == {
        "calls": 2,
        "repeats": 1,
        "file_lines": tools_bench.LINES,
        "path": tools_bench.FILE,
    }
    assert code == (0 if report["met"] else 1)
    printed = capsys.readouterr().out
    assert "tools_bench: per-call cost, median of 1 repeats of 2 calls" in printed
    assert "executor + path policy + verified open:" in printed


def test_main_refuses_a_report_path_that_is_a_directory(tmp_path: Path) -> None:
    assert tools_bench.main(["--calls", "1", "--repeats", "1", "--json", str(tmp_path)]) == 2
