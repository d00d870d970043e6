"""``--grade`` and ``--compare-modes`` through the real CLI: answers are fixed with the
scripted backend's ``answer_text`` and kept as they are (``winner_reuse``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.batch.helpers import batch, results, write_tasks
from tests.cli.helpers import write_config

Capsys = pytest.CaptureFixture[str]


def _answering(text: str) -> dict[str, Any]:
    return {"agents": [{"id": "a", "backend": {"answer_text": text}}]}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "c.yaml", [{"id": "a", "seed": 1, "latency": 0}])


def _graded(tmp_path: Path, capsys: Capsys, config: Path, grade: str, *cases: Any) -> Any:
    lines = [
        {"id": f"q{i}", "task": "t", "expected": expected, "overrides": _answering(answer)}
        for i, (answer, expected) in enumerate(cases)
    ]
    source = write_tasks(tmp_path / "tasks.jsonl", lines)
    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", config,
        "--final-answer-strategy", "winner_reuse", "--grade", grade,
    )  # fmt: skip
    return ran, [r["correct"] for r in sorted(results(tmp_path / "out.jsonl"), key=_id)]


def _id(record: dict[str, Any]) -> str:
    return str(record["id"])


def test_normalised_grading_ignores_case_space_and_a_final_period(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    ran, correct = _graded(
        tmp_path, capsys, config, "normalised", ("  Paris. ", "paris"), ("Paris, France", "Paris")
    )

    assert correct == [True, False]
    assert "50.0% (1/2)" in ran.out


def test_contains_grading_finds_the_expected_text_in_the_answer(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    _, correct = _graded(
        tmp_path, capsys, config, "contains", ("It is PARIS, of course", "paris"), ("Rome", "x")
    )

    assert correct == [True, False]


def test_regex_grading_searches_the_answer(tmp_path: Path, capsys: Capsys, config: Path) -> None:
    _, correct = _graded(
        tmp_path, capsys, config, "regex", ("answer: B", r"answer:\s*B\b"), ("answer: C", "B$")
    )

    assert correct == [True, False]


def test_number_grading_reads_the_last_number_within_the_tolerance(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    _, correct = _graded(
        tmp_path, capsys, config, "number",
        ("3 steps give 1,234.5", 1234.5), ("about 41", "42"), ("no number", 1),
    )  # fmt: skip

    assert correct == [True, False, False]


def test_a_list_of_expected_values_accepts_any_of_them(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    _, correct = _graded(tmp_path, capsys, config, "normalised", ("NYC", ["New York", "nyc"]))

    assert correct == [True]


def test_tolerance_widens_number_grading(tmp_path: Path, capsys: Capsys, config: Path) -> None:
    line = {"id": "q", "task": "t", "expected": 42, "overrides": _answering("about 41.9")}
    source = write_tasks(tmp_path / "tasks.jsonl", [line])

    batch(
        capsys, source, "--out", "out.jsonl", "--config", config,
        "--final-answer-strategy", "winner_reuse", "--grade", "number", "--tolerance", "0.5",
    )  # fmt: skip

    assert results(tmp_path / "out.jsonl")[0]["correct"] is True


def test_an_expected_value_the_grade_cannot_use_makes_its_line_bad(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "q", "task": "t", "expected": "(["}])

    ran = batch(capsys, source, "--dry-run", "--config", config, "--grade", "regex")

    assert ran.code == 2
    assert 'tasks.jsonl:1: "expected" is not a valid regular expression' in ran.err


def test_without_grade_results_are_not_scored(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "q", "task": "t", "expected": "x"}])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert results(tmp_path / "out.jsonl")[0]["correct"] is None
    assert ran.out.strip().splitlines()[1].split()[-1] == "-"  # accuracy


def test_compare_modes_runs_every_task_in_each_mode_and_prints_them_side_by_side(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    lines = [{"id": f"q{i}", "task": f"task {i}", "expected": "agent"} for i in range(3)]
    source = write_tasks(tmp_path / "tasks.jsonl", lines)

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config,
        "--compare-modes", "single,multi-norefine", "--grade", "contains",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    records = results(tmp_path / "out.jsonl")
    assert sorted((r["id"], r["mode"]) for r in records) == sorted(
        (f"q{i}", mode) for i in range(3) for mode in ("single", "multi-norefine")
    )
    single = [r for r in records if r["mode"] == "single"]
    assert all(len({a["agent"] for a in r["answers"]}) == 1 for r in single)
    multi = [r for r in records if r["mode"] == "multi-norefine"]
    assert all(r["strategy"] == "synthesize" for r in multi)
    table, paired = ran.out.strip().split("\n\n")
    rows = table.splitlines()
    assert [row.split()[0] for row in rows[1:]] == ["single", "multi-norefine"]
    assert all("(3/3)" in row for row in rows[1:])
    assert paired.splitlines()[1].split()[:4] == ["multi-norefine", "3", "0.0", "pts"]


def test_compare_modes_refuses_a_mode_it_does_not_know(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "q", "task": "t"}])

    ran = batch(capsys, source, "--dry-run", "--config", fast_config, "--compare-modes", "solo")

    assert ran.code == 2
    assert "'solo' is not a mode; use single, multi, single-norefine or multi-norefine" in ran.err


def test_resume_after_compare_modes_skips_each_mode_apart(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "q", "task": "t"}])
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    batch(
        capsys,
        source,
        "--out",
        "out.jsonl",
        "--config",
        fast_config,
        "--compare-modes",
        "multi,single",
    )

    assert [r["mode"] for r in results(tmp_path / "out.jsonl")] == ["multi", "single"]


def test_grading_a_file_without_any_expected_answer_says_nothing_will_be_graded(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    lines = [{"id": "q1", "task": "t", "target": "4"}, {"id": "q2", "task": "u", "target": "5"}]
    source = write_tasks(tmp_path / "tasks.jsonl", lines)
    ran = batch(capsys, source, "--out", "out.jsonl", "--config", config, "--grade", "exact")

    assert "--grade exact: no line has an expected answer" in ran.err
    assert "--target-field KEY" in ran.err
    assert [r["correct"] for r in results(tmp_path / "out.jsonl")] == [None, None]


def test_grading_a_file_with_expected_answers_gives_no_such_warning(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    ran, _ = _graded(tmp_path, capsys, config, "exact", ("4", "4"))

    assert "no line has an expected answer" not in ran.err
