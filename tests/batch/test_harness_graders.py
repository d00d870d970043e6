"""Result lines as an evaluation harness's: provenance on every line, the graders (built-in,
JSON field, a Python function, a model judge), per line or per file, and answer extraction,
through the real CLI. Answers are fixed with the scripted backend's ``answer_text`` and kept
as they are (``winner_reuse``)."""

from __future__ import annotations

import datetime
import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.benchmarks.http_server import model_name, open_server_process
from tests.batch.helpers import batch, results, write_tasks
from tests.cli.helpers import write_config

Capsys = pytest.CaptureFixture[str]


def _answering(text: str) -> dict[str, Any]:
    return {"agents": [{"id": "a", "backend": {"answer_text": text, "latency": 0}}]}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "panel.yaml", [{"id": "a", "seed": 1, "latency": 0}])


def _line(id_: str, answer: str, expected: Any = None, **extra: Any) -> dict[str, Any]:
    line = {"id": id_, "task": "t", "overrides": _answering(answer), **extra}
    if expected is not None:
        line["expected"] = expected
    return line


def _grades(
    tmp_path: Path, capsys: Capsys, config: Path, lines: list[dict[str, Any]], *flags: str
) -> dict[str, dict[str, Any]]:
    source = write_tasks(tmp_path / "tasks.jsonl", lines)
    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", config,
        "--final-answer-strategy", "winner_reuse", *flags,
    )  # fmt: skip
    assert ran.code in (0, 1), ran.err
    return {str(r["id"]): r for r in results(tmp_path / "out.jsonl")}


# ------------------------------------------------------------- provenance


def test_a_result_line_carries_its_provenance(tmp_path: Path, capsys: Capsys, config: Path) -> None:
    line = {"id": 7, "task": "Add 2 and 2", "expected": 4, "category": "math",
            "metadata": {"source": "gsm8k"}}  # fmt: skip
    source = write_tasks(tmp_path / "tasks.jsonl", [line])
    before = datetime.datetime.now(datetime.UTC)

    batch(capsys, source, "--out", "out.jsonl", "--config", config, "--grade", "number")

    (record,) = results(tmp_path / "out.jsonl")
    assert record["id"] == 7 and record["task"] == "Add 2 and 2" and record["expected"] == 4
    assert record["metadata"] == {"category": "math", "source": "gsm8k"}
    assert record["config_name"] == "panel" and len(record["config_hash"]) == 16
    assert record["models"] == {"a": "scripted"}
    assert record["conclave_version"] == importlib.metadata.version("conclave")
    started = datetime.datetime.fromisoformat(record["started_at"])
    assert before - datetime.timedelta(seconds=1) <= started <= datetime.datetime.now(datetime.UTC)
    assert record["duration_s"] > 0 and record["usage"]["total"]["calls"] > 0
    assert record["termination"] == "completed" and record["grader"] == "number"
    assert "cost_usd" in record


def test_a_key_a_letter_away_from_a_line_key_is_refused_not_kept_as_metadata(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "q", "task": "t", "expcted": 1}])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", config)

    assert ran.code == 2
    assert "unknown key 'expcted'; did you mean 'expected'?" in ran.err


# ------------------------------------------------------------- graders


def test_exact_grading_is_exact_but_for_surrounding_whitespace(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    lines = [_line("a", " Paris ", "Paris"), _line("b", "paris", "Paris")]

    graded = _grades(tmp_path, capsys, config, lines, "--grade", "exact")

    assert (graded["a"]["correct"], graded["b"]["correct"]) == (True, False)


def test_numeric_is_the_number_grader(tmp_path: Path, capsys: Capsys, config: Path) -> None:
    lines = [_line("a", "about 41.9", 42), _line("b", "41", 42)]

    graded = _grades(tmp_path, capsys, config, lines, "--grade", "numeric", "--tolerance", "0.5")

    assert (graded["a"]["correct"], graded["b"]["correct"]) == (True, False)


def test_json_field_grading_compares_a_field_of_the_answers_json(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    lines = [
        _line("a", 'Here:\n```json\n{"result": {"value": 42}}\n```', 42),
        _line("b", '{"result": {"value": "Forty"}}', "forty"),
        _line("c", '{"result": {}}', 42),
        _line("d", "no json here", 42),
    ]

    graded = _grades(tmp_path, capsys, config, lines, "--grade", "json:result.value")

    assert [graded[k]["correct"] for k in "abcd"] == [True, True, False, False]


def test_a_python_function_grades_when_named_as_module_and_function(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    (tmp_path / "my_graders.py").write_text(
        "def at_least(answer, expected):\n    return len(answer) >= expected\n"
    )
    lines = [_line("a", "long enough", 5), _line("b", "no", 5)]

    graded = _grades(tmp_path, capsys, config, lines, "--grade", "my_graders:at_least")

    assert (graded["a"]["correct"], graded["b"]["correct"]) == (True, False)
    assert graded["a"]["grader"] == "my_graders:at_least"


def test_a_grader_function_that_raises_leaves_the_line_ungraded_saying_why(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    (tmp_path / "broken_graders.py").write_text("def broken(answer, expected):\n    return 1 / 0\n")

    graded = _grades(
        tmp_path, capsys, config, [_line("a", "x", 1)], "--grade", "broken_graders:broken"
    )

    assert graded["a"]["correct"] is None
    error = graded["a"]["grade_error"]
    assert error == "broken_graders:broken raised ZeroDivisionError: division by zero"


def test_a_grader_function_that_cannot_be_imported_stops_the_batch_before_it_runs(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [_line("a", "x", 1)])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", config, "--grade", "nope:f")

    assert ran.code == 2
    assert "--grade: nope:f: cannot import 'nope' (ModuleNotFoundError" in ran.err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_line_may_name_its_own_grader(tmp_path: Path, capsys: Capsys, config: Path) -> None:
    lines = [
        _line("a", "It is Paris.", "Paris", grade="contains"),
        _line("b", "It is Paris.", "Paris"),
    ]

    graded = _grades(tmp_path, capsys, config, lines, "--grade", "exact")

    assert (graded["a"]["correct"], graded["b"]["correct"]) == (True, False)
    assert (graded["a"]["grader"], graded["b"]["grader"]) == ("contains", "exact")


def test_a_line_naming_a_grader_that_does_not_exist_is_bad(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [_line("a", "x", 1, grade="fuzzy")])

    ran = batch(capsys, source, "--dry-run", "--config", config)

    assert ran.code == 2
    assert "tasks.jsonl:1: \"grade\": 'fuzzy' is not a grader" in ran.err


# ------------------------------------------------------------- extraction


def test_last_line_extraction_grades_only_the_answers_last_line(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    lines = [_line("a", "First 40, then 2 more.\n42", "42")]

    plain = _grades(tmp_path, capsys, config, lines, "--grade", "exact")
    (tmp_path / "out.jsonl").unlink()
    extracted = _grades(
        tmp_path, capsys, config, lines, "--grade", "exact", "--extract", "last-line"
    )

    assert plain["a"]["correct"] is False
    assert extracted["a"]["correct"] is True and extracted["a"]["extracted_answer"] == "42"


def test_regex_extraction_grades_the_first_group_of_the_last_match(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    lines = [_line("a", "Answer: B? no. Answer: C", "C", extract=r"regex:Answer:\s*(\w)")]

    graded = _grades(tmp_path, capsys, config, lines, "--grade", "exact")

    assert graded["a"]["extracted_answer"] == "C" and graded["a"]["correct"] is True


def test_json_extraction_grades_a_field_of_the_answers_json(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    lines = [_line("a", 'Done: {"final": "Paris"}', "paris")]

    graded = _grades(
        tmp_path, capsys, config, lines, "--grade", "normalised", "--extract", "json:final"
    )

    assert graded["a"]["extracted_answer"] == "Paris" and graded["a"]["correct"] is True


def test_a_bad_extraction_flag_is_refused_naming_the_forms(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [_line("a", "x", 1)])

    ran = batch(capsys, source, "--dry-run", "--config", config, "--extract", "regex:(")

    assert ran.code == 2
    assert "--extract: regex:( does not compile" in ran.err


# ------------------------------------------------------------- a model as the judge


def _judge(tmp_path: Path, reply: str) -> Path:
    return write_config(
        tmp_path / "judge.yaml", [{"id": "judge", "latency": 0, "answer_text": reply}]
    )


@pytest.mark.parametrize(
    ("reply", "correct"),
    [("Same result.\nVERDICT: CORRECT", True), ("Wrong sum.\nVERDICT: INCORRECT", False)],
)
def test_a_model_judge_grades_by_its_verdict(
    tmp_path: Path, capsys: Capsys, config: Path, reply: str, correct: bool
) -> None:
    judge = _judge(tmp_path, reply)

    graded = _grades(
        tmp_path, capsys, config, [_line("a", "4", "four")],
        "--grade", "model", "--judge", str(judge), "--rubric", "Same number.",
    )  # fmt: skip

    assert graded["a"]["correct"] is correct
    assert graded["a"]["judge"]["final_answer"] == reply


def test_a_judge_without_a_verdict_leaves_the_line_ungraded_saying_why(
    tmp_path: Path, capsys: Capsys, config: Path
) -> None:
    judge = _judge(tmp_path, "I am not sure.")

    graded = _grades(
        tmp_path, capsys, config, [_line("a", "4", 4)], "--grade", "model", "--judge", str(judge)
    )

    assert graded["a"]["correct"] is None
    assert graded["a"]["grade_error"] == "the judge gave no VERDICT line"


def test_model_grading_needs_a_judge(tmp_path: Path, capsys: Capsys, config: Path) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [_line("a", "x", 1)])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", config, "--grade", "model")

    assert ran.code == 2
    assert "--grade model needs --judge JUDGE.yaml" in ran.err


def _priced(path: Path, url: str, agent: str) -> Path:
    backend = {
        "type": "openai",
        "model": model_name(agent, 1),
        "base_url": url,
        "api_key": "sk-loopback-test",
        "price": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0},
    }
    data = {"agents": [{"id": agent, "backend": backend}], "orchestrator": {"quiet_period": None}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_the_judges_calls_are_counted_in_the_cost(tmp_path: Path, capsys: Capsys) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "task": "t", "expected": 1}])
    with open_server_process(latency=0.0, jitter=0.0) as server:
        config = _priced(tmp_path / "run.yaml", server.url, "a")
        judge = _priced(tmp_path / "judge.yaml", server.url, "j")
        ran = batch(
            capsys, source, "--out", "out.jsonl", "--config", config, "--agent-mode", "single",
            "--refinement", "off", "--grade", "model", "--judge", judge,
        )  # fmt: skip

    (record,) = results(tmp_path / "out.jsonl")
    assert record["grade_cost_usd"] > 0 and record["cost_usd"] > 0
    total = record["cost_usd"] + record["grade_cost_usd"]
    assert f"${total:.4f}" in ran.out
