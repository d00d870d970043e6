"""The redaction benchmark runs, tiny, and reports what it says it reports (not a timed
test): the arm with secrets passes every reply and tool result through the redactor, the arm
without wraps nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.benchmarks import redaction_bench


def test_the_arm_with_secrets_redacts_every_reply_and_tool_result_and_the_other_none() -> None:
    report = redaction_bench.measure_run(agents=3, repeats=1, secrets=2)

    with_secrets, without = report["with_secrets"], report["no_secrets"]
    assert with_secrets["termination"] == without["termination"] == ["completed"]
    assert without["redactor_calls"] == 0
    # 3 agents: a listing, an answer and a vote each, and a presentation; a reply is its
    # text and each call's name and arguments, a tool result its output.
    assert with_secrets["redactor_calls"] >= 3 * 3 + 1
    assert with_secrets["lines_written"] > 0
    assert report["redactor_us_per_line_written"] > 0


def test_main_prints_both_tables_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "redaction.json"

    code = redaction_bench.main(["--agents", "3", "--repeats", "1", "--json", str(out)])

    report = json.loads(out.read_text())
    assert code == 0
    assert {row["secrets"] for row in report["per_call"]} == {1, 4, 16}
    assert report["run"]["agents"] == 3
    printed = capsys.readouterr().out
    assert "redactor, per call (no secret in the text):" in printed
    assert "us per line written" in printed
