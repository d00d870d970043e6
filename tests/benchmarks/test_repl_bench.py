"""The REPL benchmark runs end to end (tiny: a few agents, a few samples) and reports every
figure; CI asserts nothing about speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import repl_bench
from tests.repl_e2e.tmux import require_tmux


def test_the_repl_benchmark_prints_its_table_and_writes_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_tmux()
    out = tmp_path / "repl_bench.json"
    args = [
        "--agents",
        "300",  # a ring run still going when the first key is timed
        "--all-to-all",
        "20",
        "--runs",
        "1",
        "--samples",
        "3",
        "--starts",
        "1",
    ]
    args += ["--json", str(out)]

    assert repl_bench.main(args) == 0

    table = capsys.readouterr().out
    assert "start-up to the prompt (s)" in table
    assert "key echo, 300 agents streaming (ms)" in table
    assert "key echo, 20 agents all-to-all (ms)" in table
    assert "p99 <= 100 (before: freezes 1.0-2.6 s (issue 24))" in table
    report = json.loads(out.read_text())
    assert report["parameters"] == {
        "agents": 300,
        "all_to_all": 20,
        "runs": 1,
        "samples": 3,
        "starts": 1,
    }
    assert report["startup_s"]["n"] == 1
    assert report["echo_idle_ms"]["n"] == 3
    assert 1 <= report["echo_streaming_ms"]["n"] <= 3
    assert report["echo_all_to_all_ms"]["n"] >= 1
    assert report["targets"]["echo_all_to_all_p99_ms"] == 100.0
