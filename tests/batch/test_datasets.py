"""Datasets as people have them: CSV as well as JSON Lines, their own field names
(``--input-field``, ``--target-field``, ``--id-field``), and chat-message inputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.batch.helpers import batch, results, write_tasks
from tests.cli.helpers import write_config

Capsys = pytest.CaptureFixture[str]


@pytest.fixture
def answering(tmp_path: Path) -> Path:
    return write_config(tmp_path / "a.yaml", [{"id": "a", "latency": 0, "answer_text": "42"}])


def test_a_csv_dataset_runs_with_its_own_field_names(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "qa.csv").write_text(
        "id,question,answer,category\n"
        'q1,"What is 6 times 7?",42,math\n'
        'q2,"What is 40, plus 1?",41,math\n',
        encoding="utf-8",
    )

    ran = batch(
        capsys, "qa.csv", "--out", "out.jsonl", "--config", answering,
        "--input-field", "question", "--target-field", "answer", "--grade", "numeric",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    lines = {r["id"]: r for r in results(tmp_path / "out.jsonl")}
    assert lines["q2"]["task"] == "What is 40, plus 1?" and lines["q2"]["expected"] == "41"
    assert (lines["q1"]["correct"], lines["q2"]["correct"]) == (True, False)
    assert lines["q1"]["metadata"] == {"category": "math"} and lines["q1"]["line"] == 2


def test_a_csv_row_with_the_wrong_number_of_cells_is_a_bad_line(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "qa.csv").write_text("id,task\nq1,fine\nq2,too,many\n", encoding="utf-8")

    ran = batch(capsys, "qa.csv", "--dry-run", "--config", answering)

    assert ran.code == 2
    assert "qa.csv:3: 3 cells where the header row has 2; the line was skipped" in ran.err


@pytest.mark.parametrize(("header", "named"), [("id;task", "';'"), ("id\ttask", "tabs")])
def test_a_csv_file_split_by_another_delimiter_is_refused_naming_it(
    tmp_path: Path, answering: Path, capsys: Capsys, header: str, named: str
) -> None:
    (tmp_path / "semi.csv").write_text(f"{header}\n1{header[2]}x\n", encoding="utf-8")

    ran = batch(capsys, "semi.csv", "--dry-run", "--config", answering)

    assert ran.code == 2
    assert f"semi.csv:1: the header row is one column, {header!r}" in ran.err
    assert f"seems to use {named} as its delimiter" in ran.err
    assert "must be comma-separated" in ran.err and "missing" not in ran.err


def test_a_line_missing_its_task_is_told_which_flag_names_its_field(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "chat.jsonl", [{"id": 1, "messages": []}])

    no_task = batch(capsys, source, "--dry-run", "--config", answering)

    assert no_task.code == 2
    assert 'the key "task" is missing' in no_task.err and "with --input-field" in no_task.err


def test_a_dataset_with_no_ids_numbers_its_lines(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "noid.csv").write_text(
        "question,answer\nWhat is 6 times 7?,42\n\nWhat is 40 plus 2?,42\n", encoding="utf-8"
    )

    ran = batch(
        capsys, "noid.csv", "--out", "n.jsonl", "--config", answering,
        "--input-field", "question", "--target-field", "answer",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    assert sorted((r["id"], r["line"]) for r in results(tmp_path / "n.jsonl")) == [
        ("line-2", 2),
        ("line-4", 4),
    ]


def test_a_numbered_dataset_resumes_by_its_line_numbers(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "noid.jsonl", [{"task": "first"}])
    batch(capsys, source, "--out", "n.jsonl", "--config", answering)
    write_tasks(source, [{"task": "first"}, {"task": "second"}])

    ran = batch(capsys, source, "--out", "n.jsonl", "--config", answering)

    assert ran.code == 0, ran.err
    assert [r["id"] for r in results(tmp_path / "n.jsonl")] == ["line-1", "line-2"]


def test_a_dataset_where_only_some_lines_have_ids_names_the_lines_without(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    source = write_tasks(
        tmp_path / "some.jsonl", [{"id": "a", "task": "x"}, {"task": "y"}, {"task": "z"}]
    )

    ran = batch(capsys, source, "--dry-run", "--config", answering)

    assert ran.code == 2
    for line in (2, 3):
        assert f'some.jsonl:{line}: the key "id" is missing, though other lines have one' in (
            ran.err
        )
    assert "some.jsonl:1:" not in ran.err


def test_a_named_id_field_no_line_has_is_an_error_not_numbered(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "qa.csv").write_text("question,answer\nWhat is 6 times 7?,42\n", encoding="utf-8")

    ran = batch(
        capsys, "qa.csv", "--dry-run", "--config", answering, "--id-field", "uid",
        "--input-field", "question",
    )  # fmt: skip

    assert ran.code == 2
    assert 'qa.csv:2: the key "uid" is missing' in ran.err and "with --id-field" in ran.err


def test_a_jsonl_dataset_maps_its_fields_and_keeps_the_rest_as_metadata(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    line = {"uid": 7, "question": "6 x 7?", "answer": 42, "source": "gsm8k"}
    source = write_tasks(tmp_path / "gsm.jsonl", [line])

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", answering, "--id-field", "uid",
        "--input-field", "question", "--target-field", "answer", "--grade", "numeric",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    (record,) = results(tmp_path / "out.jsonl")
    assert (record["id"], record["task"], record["correct"]) == (7, "6 x 7?", True)
    assert record["metadata"] == {"source": "gsm8k"}


def test_a_misspelt_mapped_field_is_caught_like_a_misspelt_key(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "t.jsonl", [{"id": 1, "question": "q", "answr": 1}])

    ran = batch(
        capsys, source, "--dry-run", "--config", answering, "--input-field", "question",
        "--target-field", "answer",
    )  # fmt: skip

    assert ran.code == 2
    assert "unknown key 'answr'; did you mean 'answer'?" in ran.err


def test_a_chat_input_runs_its_last_user_message_after_the_earlier_turns(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    messages = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": "Remember the number 40."},
        {"role": "assistant", "content": "Noted: forty."},
        {"role": "user", "content": "Add 2 to it."},
    ]
    source = write_tasks(tmp_path / "chat.jsonl", [{"id": "c", "task": messages}])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", answering, "--log-dir", "logs")

    assert ran.code == 0, ran.err
    (record,) = results(tmp_path / "out.jsonl")
    assert record["task"] == "Answer with a number.\n\nAdd 2 to it."
    assert record["history"] == [{"task": "Remember the number 40.", "answer": "Noted: forty."}]
    transcript = (Path(record["log_dir"]) / "transcripts.jsonl").read_text(encoding="utf-8")
    assert "Remember the number 40." in transcript and "Noted: forty." in transcript


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "a chat input is a non-empty list"),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
         "the last message must be the user's"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
         "message 1: expected an assistant message, got 'user'"),
        ([{"role": "user", "content": 3}], 'message 0: expected {"role": ..., "content": "text"}'),
    ],
)  # fmt: skip
def test_a_malformed_chat_input_is_a_bad_line(
    tmp_path: Path, answering: Path, capsys: Capsys, messages: list[object], says: str
) -> None:
    source = write_tasks(tmp_path / "chat.jsonl", [json.dumps({"id": "c", "task": messages})])

    ran = batch(capsys, source, "--dry-run", "--config", answering)

    assert ran.code == 2
    assert f'chat.jsonl:1: "task": {says}' in ran.err


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("empty.jsonl", "", "holds no task; expected one JSON object per line"),
        ("blank.jsonl", "\n  \n\n", "holds no task; expected one JSON object per line"),
        ("empty.csv", "", "holds no task; expected a header row naming the fields, then one "
         "row per task"),
        ("header.csv", "id,task\n", "holds only its header row; expected one row per task "
         "below it"),
    ],
)  # fmt: skip
def test_a_tasks_file_holding_no_task_is_refused_and_no_results_file_is_made(
    tmp_path: Path, answering: Path, capsys: Capsys, name: str, text: str, said: str
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")

    ran = batch(capsys, name, "--out", "out.jsonl", "--config", answering)

    assert ran.code == 2
    assert f"conclave batch: {name} {said} (docs/batch.md)" in ran.err
    assert ran.out == ""
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "out.jsonl.lock").exists()


def test_a_dry_run_of_a_tasks_file_holding_no_task_exits_2(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")

    ran = batch(capsys, "empty.jsonl", "--dry-run", "--config", answering)

    assert ran.code == 2
    assert "empty.jsonl holds no task" in ran.err


def test_a_tasks_file_whose_every_line_is_bad_runs_nothing_and_makes_no_results_file(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "bad.jsonl", ["# a comment", "{"])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", answering)

    assert ran.code == 2
    assert "bad.jsonl:1: not JSON" in ran.err and "bad.jsonl:2: not JSON" in ran.err
    assert "bad.jsonl: every line is bad (2 bad lines, above); nothing ran" in ran.err
    assert ran.out == ""
    assert not (tmp_path / "out.jsonl").exists()


def test_a_csv_row_whose_quote_is_never_closed_is_a_bad_line_and_the_rows_after_it_run(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "q.csv").write_text(
        'id,task\n1,hello\n2,"unterminated\n3,world\n', encoding="utf-8"
    )

    ran = batch(capsys, "q.csv", "--out", "out.jsonl", "--config", answering)

    assert ran.code == 2
    assert "q.csv:3: a quoted cell opened on this line is never closed" in ran.err
    assert sorted(r["id"] for r in results(tmp_path / "out.jsonl")) == ["1", "3"]


def test_a_csv_quoted_cell_with_text_after_its_closing_quote_is_a_bad_line(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "q.csv").write_text('id,task\n1,"He said "hi" to me"\n2,fine\n', encoding="utf-8")

    ran = batch(capsys, "q.csv", "--dry-run", "--config", answering)

    assert ran.code == 2
    assert "q.csv:2: a quoted cell's closing quote is followed by text" in ran.err
    assert 'write a quote inside a quoted cell as two ("")' in ran.err
    assert "1 good line, 1 bad line" in ran.err


def test_a_csv_file_split_by_another_delimiter_says_so_once_and_makes_no_results_file(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    (tmp_path / "semi.csv").write_text("id;task\n1;hello\n", encoding="utf-8")

    ran = batch(capsys, "semi.csv", "--out", "out.jsonl", "--config", answering)

    assert ran.code == 2
    [message] = [line for line in ran.err.splitlines() if "semi.csv" in line]
    assert "skipped" not in message and "as its delimiter" in message
    assert ran.out == ""
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"id": 1, "task": "a\tb"}', "Invalid control character"),
        ('{"id": 1, "task": "never closed}', "Unterminated string starting"),
        ('{"id": 1, "task": "t"} extra', "Extra data"),
    ],
)
def test_a_line_that_is_not_json_says_what_is_wrong_and_where_once(
    tmp_path: Path, answering: Path, capsys: Capsys, line: str, says: str
) -> None:
    source = write_tasks(tmp_path / "bad.jsonl", [line])

    ran = batch(capsys, source, "--dry-run", "--config", answering)

    [message] = [e for e in ran.err.splitlines() if "bad.jsonl:1:" in e]
    assert f"bad.jsonl:1: not JSON ({says}" in message
    assert re.search(r"[a-z'] at column \d+\)", message), message
    assert " at at " not in message


def test_a_csv_task_longer_than_the_csv_modules_own_limit_is_read(
    tmp_path: Path, answering: Path, capsys: Capsys
) -> None:
    long = "x" * 200_000  # the csv module refuses cells over 131,072 characters by default
    (tmp_path / "long.csv").write_text(f"id,task\n1,{long}\n", encoding="utf-8")

    ran = batch(capsys, "long.csv", "--dry-run", "--config", answering)

    assert ran.code == 0, ran.err
    assert "1 good line, 0 bad lines" in ran.err
