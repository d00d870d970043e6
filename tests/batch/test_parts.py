"""The parts of ``conclave batch`` that need no run: grading rules, the exit code, the
summary's figures, the progress bar, RESULTS repair and overrides."""

from __future__ import annotations

import io
import signal
from pathlib import Path
from typing import Any

import pytest

from conclave.config.problems import ConfigError
from conclave.config.resolver import UsageError
from conclave.config.schema import default_config
from conclave.ui.batch.command import exit_code, parse_modes
from conclave.ui.batch.grading import Grade, Grader, is_correct, last_number
from conclave.ui.batch.progress import BatchProgress
from conclave.ui.batch.results import NotResults, open_results
from conclave.ui.batch.summary import ModeSummary, render_table, summarise
from conclave.ui.batch.tasks import BadLine, apply_overrides
from conclave.ui.exit_codes import ExitCode


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("The answer is 42.", 42.0),
        ("-1,234.5 apples", -1234.5),
        ("light: 3e8 m/s", 3e8),
        ("about 42%", 42.0),
        ("first 7, then 12", 12.0),
        ("no digits", None),
    ],
)
def test_number_grading_reads_the_last_number_written(text: str, number: float | None) -> None:
    assert last_number(text) == number


def test_no_answer_is_never_correct() -> None:
    assert not is_correct(Grader(method=Grade.CONTAINS), None, "", 0.0)


def test_normalised_grading_normalises_unicode_width() -> None:
    assert is_correct(Grader(method=Grade.NORMALISED), "\uff21\uff22\uff23", "abc", 0.0)


def test_exact_grading_only_ignores_surrounding_whitespace() -> None:
    exact = Grader(method=Grade.EXACT)

    assert is_correct(exact, "  Paris\n", "Paris", 0.0)
    assert not is_correct(exact, "paris", "Paris", 0.0)
    assert not is_correct(exact, "Paris.", "Paris", 0.0)


def _row(**changes: Any) -> ModeSummary:
    fields: dict[str, Any] = dict(
        mode="multi", tasks=1, completed=1, failed=0, timed_out=0, not_run=0, tokens=0,
        cost_usd=None, p50_s=None, p95_s=None, graded=0, correct=0,
    )  # fmt: skip
    return ModeSummary(**(fields | changes))


@pytest.mark.parametrize(
    ("row", "bad", "signals", "lost", "code"),
    [
        ({}, [], [], False, ExitCode.OK),
        ({"timed_out": 1}, [], [], False, ExitCode.TIMEOUT),
        ({"not_run": 1}, [], [], False, ExitCode.TIMEOUT),
        ({"failed": 1, "timed_out": 1}, [], [], False, ExitCode.FAILED),
        ({}, [], [], True, ExitCode.FAILED),
        ({"failed": 1}, [BadLine(line=1, reason="x")], [], False, ExitCode.USAGE),
        ({}, [BadLine(line=1, reason="x")], [signal.SIGINT], False, ExitCode.CANCELLED),
        ({}, [], [signal.SIGTERM, signal.SIGINT], False, ExitCode.TERMINATED),
    ],
)
def test_the_exit_code_is_0_only_when_every_task_completed(
    row: dict[str, Any], bad: list[BadLine], signals: list[int], lost: bool, code: ExitCode
) -> None:
    assert exit_code([_row(**row)], bad, signals, lost=lost) == code


def test_the_summary_counts_terminations_tokens_cost_and_run_time_percentiles() -> None:
    records: list[dict[str, Any] | None] = [
        {"termination": "completed", "duration_s": float(i), "input_tokens": 10,
         "output_tokens": 5, "cost_usd": 0.5}
        for i in range(1, 21)
    ]  # fmt: skip
    records += [
        {"termination": "failed", "duration_s": 0.0, "cost_usd": 0.0},
        {"termination": "max_cost", "cost_usd": 0.0},
        None,
    ]

    row = summarise("multi", records, [True, False, None])

    assert (row.tasks, row.completed, row.failed, row.timed_out, row.not_run) == (23, 20, 1, 1, 1)
    assert row.tokens == 300
    assert row.cost_usd == 10.0
    assert (row.p50_s, row.p95_s) == (10.0, 19.0)
    assert row.accuracy == 0.5


def test_the_summary_cost_is_unknown_when_one_run_had_no_price() -> None:
    records: list[dict[str, Any] | None] = [
        {"termination": "completed", "cost_usd": 0.5},
        {"termination": "failed", "cost_usd": None},
    ]

    row = summarise("multi", records, [None, None])

    assert row.cost_usd is None
    assert render_table([row]).splitlines()[1].split()[7] == "-"


def test_on_a_terminal_progress_is_one_bar_redrawn_in_place() -> None:
    stream = io.StringIO()
    now = [0.0]
    progress = BatchProgress(4, stream, terminal=True, clock=lambda: now[0])

    for _ in range(2):
        now[0] += 1.0
        progress.record(completed=True, cost=0.25)
    progress.finish()

    frames = stream.getvalue().split("\r")[1:]
    assert frames[-1].startswith(
        "\x1b[2K[############............] 2/4 runs, 0 not completed, $0.5000"
    )
    assert "ETA 2s" in frames[-1]
    assert stream.getvalue().endswith("\n")


def test_without_a_terminal_progress_is_a_line_every_ten_seconds() -> None:
    stream = io.StringIO()
    now = [0.0]
    progress = BatchProgress(100, stream, terminal=False, clock=lambda: now[0])

    for _ in range(30):
        now[0] += 1.0
        progress.record(completed=True, cost=None)

    assert stream.getvalue().count("\n") == 3


def test_progress_shows_an_unpriced_cost_as_the_tables_do() -> None:
    stream = io.StringIO()
    progress = BatchProgress(2, stream, terminal=False, clock=lambda: 1.0)

    progress.record(completed=True, cost=None)

    assert ", 0 not completed, -, " in progress.line()
    assert "$-" not in progress.line()


def test_reading_results_repairs_a_cut_last_line_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "termination": "completed"}\n{"id": "b", "termi', "utf-8")

    results = open_results(path)
    results.append({"id": "c", "termination": "completed"})
    results.close()

    assert list(results.existing) == [("a", "", 1)]
    assert "cut short" in results.notes[0]
    assert path.read_text("utf-8").splitlines()[1] == '{"id": "c", "termination": "completed"}'


def test_a_line_of_results_that_is_not_a_result_is_named_and_ignored(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('garbage\n{"id": "a", "termination": "completed"}\n', "utf-8")

    results = open_results(path)
    results.close()

    assert results.notes == [f"{path}:1: not a result line; ignored"]
    assert list(results.existing) == [("a", "", 1)]


def test_a_file_holding_lines_but_no_result_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.jsonl"
    text = '{"id": "t1", "task": "a"}\n{"id": "t2", "task": "no newline at the end"}'
    path.write_text(text, "utf-8")

    with pytest.raises(NotResults, match="not a results file of conclave batch"):
        open_results(path)

    assert path.read_text("utf-8") == text  # neither cut nor appended to


def test_a_first_result_cut_mid_write_is_still_repaired(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "termi', "utf-8")

    open_results(path).close()

    assert path.read_text("utf-8") == ""


def test_overrides_set_only_the_orchestrator_fields_they_name() -> None:
    config = default_config(2)

    changed = apply_overrides(config, {"orchestrator": {"run_timeout": 5, "visibility": "ring"}})

    assert changed.orchestrator.run_timeout == 5
    assert changed.orchestrator.visibility == "ring"
    assert changed.orchestrator.quiet_period == config.orchestrator.quiet_period
    assert changed.agents == config.agents


def test_overrides_refused_name_the_field_and_what_was_expected() -> None:
    with pytest.raises(ConfigError) as caught:
        apply_overrides(default_config(2), {"agents": [{"id": "x", "backend": {"type": "gpt"}}]})

    assert "overrides.agents[0].backend.type" in str(caught.value)


def test_mode_names_follow_the_modes_table() -> None:
    modes = parse_modes("single,multi-norefine,multi-refine")

    assert [m.name for m in modes] == ["single", "multi-norefine", "multi"]


def test_a_mode_named_twice_is_refused() -> None:
    with pytest.raises(UsageError, match="named twice"):
        parse_modes("single,single-refine")
