"""``conclave resume`` refuses what cannot be an answer or a paused run before anything runs
(exit 2, saying what to give instead): an empty ``--answer``, and a file for ``RUN_DIR``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, write_config
from tests.questions.helpers import CRITICAL


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    steps = [{"tool": "ask_user", "arguments": CRITICAL}]
    cfg = write_config(tmp_path / "ask.yaml", [{"id": "a1", "latency": 0, "tool_steps": steps}])
    log = tmp_path / "paused"
    args = ["run", "--config", str(cfg), "--log-dir", str(log), "--on-question", "pause"]
    assert main([*args, TASK]) == ExitCode.PAUSED
    capsys.readouterr()
    return log


@pytest.mark.parametrize("answer", ["", "   "])
def test_an_empty_answer_is_refused_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: str
) -> None:
    log = _paused(tmp_path, capsys)

    code = main(["resume", str(log), "--answer", answer])

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "--answer is empty" in err
    assert "answers: keep (Keep them: safe), delete (Delete them); default keep" in err
    assert not (log / "resumed-1").exists()


def test_a_file_given_for_the_run_directory_is_refused_naming_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys)

    code = main(["resume", str(log / "events.jsonl"), "--answer", "keep"])

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "is not a paused run" in err
    assert "Errno" not in err
