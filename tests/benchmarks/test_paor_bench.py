"""The PAOR benchmark runs, tiny, and reports what it says it reports (not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import paor_bench


def test_a_round_of_n_iterations_makes_four_moves_each_and_one_to_end() -> None:
    row = paor_bench.measure(iterations=3, repeats=1)
    assert row["transitions"] == 3 * 4 + 1
    assert row["overhead_ms_per_iteration"] > 0
    assert row["target_ms"] == 2.0


def test_main_prints_the_table_with_its_target_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "paor.json"
    code = paor_bench.main(["--iterations", "2,3", "--repeats", "1", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert [row["iterations"] for row in report["rows"]] == [2, 3]
    printed = capsys.readouterr().out
    assert "ms/iter" in printed and "target" in printed and "< 2" in printed


def test_bad_iteration_counts_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        paor_bench.main(["--iterations", "0"])
    assert caught.value.code == 2
    assert "expected whole numbers >= 1" in capsys.readouterr().err
