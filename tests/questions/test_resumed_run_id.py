"""A resumed run's id is unique: its log directory's name (``resumed-N``, the same for the
first resume of every paused run) behind its paused run's id, in the session and in the
stream alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.actors.run.lineage import run_id
from conclave.actors.session.history import read_conversation
from conclave.actors.session.store import read_session, session_path
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.sessions import sessions_root
from tests.cli.helpers import TASK, write_config
from tests.questions.helpers import CRITICAL


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _paused(tmp_path: Path) -> Path:
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    config = write_config(tmp_path / "ask.yaml", [{"id": "a1", "latency": 0, "tool_steps": [ask]}])
    log = tmp_path / "20261127-134500-abcdef"
    args = ["run", "--config", str(config), "--log-dir", str(log), "--on-question", "pause"]
    assert main([*args, TASK]) == ExitCode.PAUSED
    return log


def test_a_run_id_is_its_log_directorys_name() -> None:
    assert run_id(Path(".conclave/runs/20261127-134500-abcdef")) == "20261127-134500-abcdef"


def test_a_resumed_runs_id_is_behind_every_paused_runs_id() -> None:
    log = Path(".conclave/runs/20261127-134500-abcdef/resumed-1/resumed-2")
    assert run_id(log) == "20261127-134500-abcdef/resumed-1/resumed-2"


def test_the_session_records_a_resumed_run_under_the_paused_runs_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path)

    assert main(["resume", str(log), "--answer", "delete"]) == ExitCode.OK

    paused = json.loads((log / "paused.json").read_text(encoding="utf-8"))
    entries = read_session(session_path(sessions_root(), paused["session"])).entries
    [exchange] = read_conversation(entries).exchanges
    assert exchange.run is not None
    assert exchange.run.run_id == "20261127-134500-abcdef/resumed-1"


def test_a_resumed_runs_stream_names_it_by_the_same_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path)
    capsys.readouterr()

    main(["resume", str(log), "--answer", "delete", "--output-format", "stream-json"])

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["run_id"] for line in lines} == {"20261127-134500-abcdef/resumed-1"}
