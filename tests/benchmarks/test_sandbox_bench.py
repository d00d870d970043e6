"""The sandbox benchmark runs, tiny, and reports what it says it reports (not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import sandbox_bench
from tests.sandbox.conftest import missing

# Every spec that opens the Docker engine runs on the same xdist worker, one at a time:
# opening it removes every orphaned container, including those the orphan specs make to
# see them removed.
pytestmark = pytest.mark.xdist_group("docker")


def test_a_tiny_run_reports_every_sandbox() -> None:
    report = sandbox_bench.run_benchmark(calls=2, repeats=1)
    assert [r["measure"] for r in report["rows"]] == list(sandbox_bench.MEASURES)
    for row in report["rows"]:
        if not row["available"]:
            missing(f"{row['measure']}: {row['reason']}")
        assert row["median_ms"] > 0
    assert isinstance(report["met"], bool)


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sandbox.json"
    code = sandbox_bench.main(["--calls", "1", "--repeats", "1", "--json", str(out)])
    report = json.loads(out.read_text())
    assert report["benchmark"] == "sandbox_bench"
    assert report["parameters"] == {"calls": 1, "repeats": 1, "command": "true"}
    assert code == (0 if report["met"] else 1)
    printed = capsys.readouterr().out
    assert "sandbox_bench: run_shell('true') per call, median of 1 repeats of 1 calls" in printed
    assert (
        "targets (local and local + bubblewrap <= 10 ms, docker (session shell) <= 25 ms per call):"
    ) in printed
    bubblewrap = next(r for r in report["rows"] if r["measure"] == sandbox_bench.BUBBLEWRAP)
    if bubblewrap["available"]:
        assert (bubblewrap["before_ms"], bubblewrap["target_ms"]) == (22.6, 10.0)


def test_main_refuses_a_report_path_that_is_a_directory(tmp_path: Path) -> None:
    assert sandbox_bench.main(["--calls", "1", "--repeats", "1", "--json", str(tmp_path)]) == 2
