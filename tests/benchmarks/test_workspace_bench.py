"""The workspace benchmark runs, tiny, and reports what it says it reports (not a timed test):
every agent reads its three files and writes one, and the ideal is the same run on the
virtual clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import workspace_bench


def test_a_tiny_run_counts_the_file_work_of_every_agent(tmp_path: Path) -> None:
    report = workspace_bench.run_benchmark(3, 0.05, 1, log_root=tmp_path)

    assert report["termination"] == "completed"
    assert report["tool_calls"] == {"read_file": 9, "write_file": 3}
    assert report["tool_calls_failed"] == 0
    assert report["outputs_written"] == 3
    assert report["snapshots"] == report["answers"] >= 3
    # Each answer took four tool steps and the answer call; then votes and the presentation.
    assert report["llm_started"] >= 3 * 5 + 3 + 1
    assert report["ideal_tool_calls"] == report["tool_calls"]
    assert report["talk_only_llm_started"] < report["llm_started"]
    assert 0 < report["talk_only_ideal_s"] < report["ideal_s"]
    # Not below the wall: the virtual-clock run draws its own jitter order (it may make a few
    # more calls than the measured one), so a short wall can come in under it.
    assert report["wall_s"] > 0
    assert list(tmp_path.iterdir()) == []  # scratch removed


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "workspace.json"
    argv = ["--agents", "2", "--latency", "0.02", "--repeats", "1"]
    code = workspace_bench.main([*argv, "--json", str(out), "--log-root", str(tmp_path / "l")])

    report = json.loads(out.read_text())
    assert code == 0
    assert report["benchmark"] == "workspace_bench"
    assert report["parameters"]["agents"] == 2
    printed = capsys.readouterr().out
    assert "workspace_bench: 2 scripted agents each read 3 files and write 1" in printed
    assert "agents whose file was written" in printed


def test_main_refuses_a_report_path_that_is_a_directory(tmp_path: Path) -> None:
    assert workspace_bench.main(["--agents", "1", "--json", str(tmp_path)]) == 2
