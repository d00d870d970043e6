"""The session benchmark runs, tiny, and reports what it says it reports (not a timed
test): every row with its target, and the JSON it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import session_bench


def test_the_report_has_resume_and_append_rows_each_with_its_target() -> None:
    report = session_bench.measure(turns=60, repeats=2, appends=20)
    measures = [row["measure"] for row in report["rows"]]
    assert measures[0].startswith("resume 60 turns")
    assert any(m.startswith("append a user turn, median") for m in measures)
    assert any(m.startswith("append a run with its answer, p99") for m in measures)
    targeted = [row for row in report["rows"] if row["met"] is not None]
    assert {row["target"] for row in targeted} == {"< 0.3", "< 1.0"}
    assert report["entries"] == 60 * 2 + 2


def test_main_prints_the_table_with_its_target_column_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sessions.json"
    session_bench.main(["--turns", "30", "--repeats", "1", "--appends", "10", "--json", str(out)])
    printed = capsys.readouterr().out
    assert "measure" in printed and "target" in printed and "met" in printed
    assert json.loads(out.read_text())["turns"] == 30
