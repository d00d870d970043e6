"""The MCP benchmark runs, tiny, against the real servers, and reports what it says it
reports (not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import mcp_bench


@pytest.mark.usefixtures("everything_server", "fs_server", "time_server")
def test_a_tiny_run_reports_each_path_the_overhead_and_three_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mcp.json"

    assert mcp_bench.main(["--calls", "5", "--json", str(out)]) == 0

    report = json.loads(out.read_text())
    assert set(report["per_call"]) == {"sdk", "executor", "built-in"}
    assert all(figures["median_ms"] > 0 for figures in report["per_call"].values())
    assert report["overhead_ms"] == pytest.approx(
        report["per_call"]["executor"]["median_ms"] - report["per_call"]["sdk"]["median_ms"]
    )
    assert len(report["startup_3_stdio_s"]) == len(report["startup_3_stdio_trusted_s"]) == 3
    assert "overhead (executor - sdk)" in capsys.readouterr().out
