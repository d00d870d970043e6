"""Headless runs choose what a question meets with ``--on-question``: the default (recorded
as an assumption, shown in the result), a failure (exit 1, the question in the JSON
result), or a pause (exit 4, the question in the JSON result and in the log dir). Without
the flag agents cannot ask."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, write_config
from tests.questions.helpers import CRITICAL, MINOR

PENDING = {
    "agent": "solo",
    "question_id": "q1",
    "question": {
        "question": CRITICAL["question"],
        "context": CRITICAL["context"],
        "severity": "critical",
        "options": [
            {"label": "Keep them", "value": "keep", "description": "safe"},
            {"label": "Delete them", "value": "delete", "description": ""},
        ],
        "default": "keep",
    },
}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _asking_config(tmp_path: Path, *questions: dict[str, Any]) -> Path:
    steps = [{"tool": "ask_user", "arguments": q} for q in questions]
    return write_config(tmp_path / "ask.yaml", [{"id": "solo", "latency": 0, "tool_steps": steps}])


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, dict[str, Any], str]:
    cfg = _asking_config(tmp_path, CRITICAL, MINOR)
    log = tmp_path / "run"
    args = ["run", "--config", str(cfg), "--log-dir", str(log), "--output-format", "json"]
    code = main([*args, *flags, TASK])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_default_takes_each_questions_default_and_shows_it_as_an_assumption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, _ = _run(tmp_path, capsys, "--on-question", "default")

    assert code == ExitCode.OK
    assert result["assumptions"] == [
        {"agent": "solo", "question": CRITICAL["question"], "assumption": "keep"},
        {"agent": "solo", "question": MINOR["question"], "assumption": "spaces"},
    ]
    assert result["pending_question"] is None
    assert result["final_answer"]


def test_fail_exits_1_with_the_question_in_the_json_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, _ = _run(tmp_path, capsys, "--on-question", "fail")

    assert code == ExitCode.FAILED
    assert result["termination"] == "failed"
    assert result["pending_question"] == PENDING
    assert "--on-question fail" in result["failure_reason"]


def test_pause_exits_4_with_the_question_in_the_result_and_the_log_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, err = _run(tmp_path, capsys, "--on-question", "pause")

    assert code == ExitCode.PAUSED
    assert int(ExitCode.PAUSED) == 4
    assert result["termination"] == "paused"
    assert result["final_answer"] is None
    assert result["pending_question"] == PENDING
    kept = json.loads((tmp_path / "run" / "question.json").read_text(encoding="utf-8"))
    assert kept == PENDING
    assert "paused: needs the user" in err
    assert "conclave resume" in err


def test_a_pause_says_on_stderr_what_the_answer_may_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, err = _run(tmp_path, capsys, "--on-question", "pause")

    assert f"conclave:   {CRITICAL['context']}" in err
    assert "conclave:   answers: keep (Keep them: safe), delete (Delete them); default keep" in err
    assert "--answer VALUE (one of the answers, or your own words)" in err


def test_a_pause_on_a_question_without_options_asks_for_your_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _asking_config(tmp_path, MINOR)
    args = ["run", "--config", str(cfg), "--log-dir", str(tmp_path / "run")]
    main([*args, "--on-question", "pause", TASK])
    err = capsys.readouterr().err

    assert "conclave:   default spaces\n" in err
    assert "--answer VALUE (your own words)" in err


def test_a_pause_points_at_conclave_resume_not_at_a_new_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, err = _run(tmp_path, capsys, "--on-question", "pause")

    [session_line] = [line for line in err.splitlines() if line.startswith("conclave: session ")]
    assert "its paused turn goes on with the conclave resume above" in session_line
    assert "conclave run --resume" not in err


def test_without_the_flag_agents_cannot_ask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, _ = _run(tmp_path, capsys)

    assert code == ExitCode.OK
    assert result["assumptions"] == []
    events = (tmp_path / "run" / "events.jsonl").read_text(encoding="utf-8")
    assert "question_asked" not in events


def test_an_unknown_policy_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--on-question", "ask", TASK])

    assert code == ExitCode.USAGE
    assert "--on-question" in capsys.readouterr().err
