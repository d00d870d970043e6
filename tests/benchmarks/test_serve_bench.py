"""The serve benchmark runs, tiny, through a real `conclave serve` process and real websocket
clients, and reports what it says it reports (not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import serve_bench


def test_a_tiny_run_delivers_every_line_to_every_client_and_reports_the_overhead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "serve.json"
    argv = ["--agents", "10", "--clients", "3", "--repeats", "1", "--json", str(out)]

    assert serve_bench.main(argv) == 0

    report = json.loads(out.read_text())
    [watched] = report["figures"]["watched"]
    assert watched["clients_done"] == 3
    assert watched["lines"] > 0 and watched["frames"] > 0
    assert report["parameters"]["clients"] == 3
    assert isinstance(report["met"], bool)
    assert "fan-out latency p50 (ms)" in capsys.readouterr().out
