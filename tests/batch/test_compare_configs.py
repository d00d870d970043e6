"""Comparisons: ``--epochs`` with pass@1 and pass@k, accuracy per category, ``--compare``
of configs with paired differences and bootstrap intervals, through the real CLI; and the
statistics on their own."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conclave.ui.batch.compare import (
    Estimate,
    PairedRow,
    TaskScores,
    bootstrap_ci,
    paired_rows,
    paired_table,
    pass_at_k,
)
from conclave.ui.batch.summary import summarise
from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.cli.helpers import write_config

Capsys = pytest.CaptureFixture[str]


def _answering(tmp_path: Path, name: str, text: str) -> Path:
    return write_config(tmp_path / f"{name}.yaml", [{"id": "a", "latency": 0, "answer_text": text}])


def _sections(out: str) -> list[list[str]]:
    return [block.splitlines() for block in out.strip().split("\n\n")]


# ------------------------------------------------------------- statistics


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(3, 1, 1, 1 / 3), (3, 1, 3, 1.0), (5, 2, 2, 0.7), (4, 0, 2, 0.0), (4, 4, 1, 1.0)],
)
def test_pass_at_k_is_the_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert math.isclose(pass_at_k(n, c, k), expected)


def test_the_summary_gives_pass_at_1_and_pass_at_k_over_epochs() -> None:
    grades: list[bool | None] = [True, False, False, True, True, True]
    records: list[dict[str, Any] | None] = [{"termination": "completed"}] * 6

    row = summarise("multi", records, grades, epochs=3)

    assert row.tasks == 2
    assert row.pass_at_1 is not None and math.isclose(row.pass_at_1, (1 / 3 + 1) / 2)
    assert row.pass_at_k == 1.0


def test_a_bootstrap_interval_holds_the_mean_and_is_repeatable() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]

    low, high = bootstrap_ci(values)

    assert low < sum(values) / len(values) < high
    assert bootstrap_ci(values) == (low, high)
    assert bootstrap_ci([0.5] * 8) == (0.5, 0.5)


def test_paired_differences_use_only_the_tasks_both_variants_have() -> None:
    base = TaskScores(accuracy={"a": 0.0, "b": 1.0, "c": 0.0}, cost_usd={}, latency_s={"a": 1.0})
    other = TaskScores(accuracy={"a": 1.0, "b": 1.0}, cost_usd={"a": 0.1}, latency_s={"a": 3.0})

    (row,) = paired_rows({"base": base, "other": other})

    assert row.accuracy is not None and row.accuracy.tasks == 2 and row.accuracy.mean == 0.5
    assert row.cost_usd is None
    assert row.latency_s is not None and row.latency_s.mean == 2.0


def test_a_paired_difference_that_rounds_to_zero_prints_without_a_sign() -> None:
    tiny = Estimate(tasks=3, mean=-0.001, low=-0.004, high=0.002)
    row = PairedRow(variant="panel", baseline="single", accuracy=None, cost_usd=None,
                    latency_s=tiny)  # fmt: skip

    (cells,) = paired_table([row]).rows

    assert cells[-2:] == ["0.00s", "[0.00s, 0.00s]"]


def test_a_paired_difference_keeps_its_sign_when_it_shows() -> None:
    shown = Estimate(tasks=3, mean=-0.25, low=-0.5, high=0.125)
    row = PairedRow(variant="panel", baseline="single", accuracy=None, cost_usd=None,
                    latency_s=shown)  # fmt: skip

    (cells,) = paired_table([row]).rows

    assert cells[-2:] == ["-0.25s", "[-0.50s, +0.12s]"]


# ------------------------------------------------------------- through the CLI


def test_epochs_run_each_task_k_times_and_report_pass_rates(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2, expected="agent"))

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config, "--epochs", "3",
        "--grade", "contains",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    lines = results(tmp_path / "out.jsonl")
    assert sorted((r["id"], r["epoch"]) for r in lines) == [
        (f"t{i}", e) for i in range(2) for e in (1, 2, 3)
    ]
    header, row = _sections(ran.out)[0]
    assert header.split()[:2] == ["mode", "runs"] and header.split()[-2:] == ["pass@1", "pass@3"]
    assert row.split()[1] == "6" and row.split()[-2:] == ["100.0%", "100.0%"]


def test_more_epochs_on_resume_run_only_the_new_epochs(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--epochs", "2")

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--epochs", "3")

    assert "4 runs already in out.jsonl; skipped" in ran.err
    assert sorted(r["epoch"] for r in results(tmp_path / "out.jsonl")[4:]) == [3, 3]


def test_accuracy_is_given_per_category_from_the_tasks_metadata(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    lines: list[dict[str, Any]] = [
        {"id": "m1", "task": "t", "expected": "agent", "category": "math"},
        {"id": "m2", "task": "t", "expected": "nowhere to be found", "category": "math"},
        {"id": "g1", "task": "t", "expected": "agent", "metadata": {"category": "geo"}},
    ]
    source = write_tasks(tmp_path / "tasks.jsonl", lines)

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config, "--grade", "contains"
    )

    categories = _sections(ran.out)[1]
    assert categories[0].split() == ["category", "multi"]
    assert categories[1].split() == ["geo", "100.0%", "(1/1)"]
    assert categories[2].split() == ["math", "50.0%", "(1/2)"]


def test_compare_runs_every_config_on_the_same_tasks_with_paired_differences(
    tmp_path: Path, capsys: Capsys
) -> None:
    single = _answering(tmp_path, "single", "It is 41.")
    panel = _answering(tmp_path, "panel", "It is 42.")
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(4, expected=42))

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--compare", single, panel,
        "--grade", "numeric", "--summary-json", "summary.json",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    lines = results(tmp_path / "out.jsonl")
    assert sorted((r["variant"], r["config_name"]) for r in lines) == (
        [("panel", "panel")] * 4 + [("single", "single")] * 4
    )
    table, paired = _sections(ran.out)
    assert table[0].split()[0] == "config"
    assert [(r.split()[0], r.split()[-2]) for r in table[1:]] == [
        ("single", "0.0%"),
        ("panel", "100.0%"),
    ]
    assert paired[0].split()[:2] == ["vs", "single"]
    assert paired[1].split()[:6] == ["panel", "4", "+100.0", "pts", "[+100.0", "pts,"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["paired"][0]["accuracy"] == {"tasks": 4, "mean": 1.0, "low": 1.0, "high": 1.0}


def test_compare_with_compare_modes_names_each_variant_config_and_mode(
    tmp_path: Path, capsys: Capsys
) -> None:
    one = _answering(tmp_path, "one", "x")
    two = _answering(tmp_path, "two", "y")
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--compare", one, two,
        "--compare-modes", "single,multi",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    assert sorted(r["variant"] for r in results(tmp_path / "out.jsonl")) == [
        "one/multi", "one/single", "two/multi", "two/single",
    ]  # fmt: skip


def test_compare_refuses_config_as_well(tmp_path: Path, fast_config: Path, capsys: Capsys) -> None:
    one = _answering(tmp_path, "one", "x")
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--dry-run", "--config", fast_config, "--compare", one, one)

    assert ran.code == 2
    assert "--compare names the configs to run; drop --config" in ran.err


def test_compare_refuses_two_configs_of_one_name(tmp_path: Path, capsys: Capsys) -> None:
    one = _answering(tmp_path, "one", "x")
    (tmp_path / "other").mkdir()
    again = _answering(tmp_path / "other", "one", "y")
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--dry-run", "--compare", one, again)

    assert ran.code == 2
    assert "--compare: two configs are named 'one'" in ran.err
