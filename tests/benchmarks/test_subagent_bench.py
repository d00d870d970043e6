"""The sub-agent benchmark runs, tiny, and reports what it says it reports (not a timed
test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import subagent_bench


def test_every_sub_agent_of_every_wave_runs_its_round() -> None:
    row = subagent_bench.measure(subagents=6, waves=3, repeats=1)
    assert row["subagent_llm_calls"] == 6 * 4
    assert row["peak_in_flight"] >= 1
    assert row["overhead_ms_per_subagent"] > 0
    assert row["target_ms"] == 5.0


def test_the_plan_puts_each_wave_after_the_one_before() -> None:
    steps = subagent_bench._waves_plan(5, 2)["steps"]
    assert [(s["id"], s["depends_on"]) for s in steps] == [
        ("w0s0", []),
        ("w0s1", []),
        ("w0s2", []),
        ("w1s0", ["w0s0", "w0s1", "w0s2"]),
        ("w1s1", ["w0s0", "w0s1", "w0s2"]),
    ]


def test_main_prints_the_table_with_its_target_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "subagents.json"
    argv = ["--subagents", "4", "--waves", "1,2", "--repeats", "1", "--json", str(out)]
    assert subagent_bench.main(argv) == 0
    report = json.loads(out.read_text())
    assert [row["waves"] for row in report["rows"]] == [1, 2]
    printed = capsys.readouterr().out
    assert "ms/sub" in printed and "< 5" in printed


def test_more_waves_than_sub_agents_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        subagent_bench.main(["--subagents", "2", "--waves", "3"])
    assert caught.value.code == 2
    assert "more waves than --subagents" in capsys.readouterr().err


def test_with_a_model_latency_a_waves_sub_agents_are_in_flight_at_once() -> None:
    row = subagent_bench.measure_latency(subagents=8, waves=2, latency=0.01)
    assert row["peak_in_flight"] == 4
    assert row["floor_s"] == pytest.approx((2 + 4 * 2) * 0.01)
    assert row["wall_s"] >= row["floor_s"]
