"""A PAOR reflection that needs the user, with the scripted backend (``paor_question``): a
headless run with ``--on-question pause`` pauses with exit 4 and the question, and
``conclave resume --answer`` goes on with the answer to a completed run. No key, no network:
the same path ``test_rename_over_http`` takes with a model served over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.actors.agent.transcript_log import read_transcripts
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

QUESTION = "Rename the test helpers too?"
TASK = "rename old_total to compute_total"


def _config(tmp_path: Path) -> Path:
    backend = {"type": "scripted", "latency": 0, "paor_question": QUESTION}
    path = tmp_path / "asks.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "agents": [{"id": "p", "loop": "paor", "backend": backend}],
                "orchestrator": {"quiet_period": None},
            }
        )
    )
    return path


def _json_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, Any]]:
    log = tmp_path / "paused"
    code, result = _json_run(
        capsys,
        "run",
        "--config",
        str(_config(tmp_path)),
        "--log-dir",
        str(log),
        "--on-question",
        "pause",
        TASK,
    )
    assert code == ExitCode.PAUSED
    return log, result


def test_a_reflection_that_needs_the_user_pauses_the_run_with_its_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, result = _paused(tmp_path, capsys)

    assert result["termination"] == "paused"
    assert result["pending_question"]["agent"] == "p"
    assert result["pending_question"]["question"]["question"] == QUESTION


def test_resume_with_the_answer_completes_the_round_the_agent_having_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = _paused(tmp_path, capsys)

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "no, only old_total")

    assert code == ExitCode.OK
    assert resumed["termination"] == "completed"
    assert resumed["final_answer"]
    lines = list(read_transcripts(log / "resumed-1" / "transcripts.jsonl"))
    read_back = [line["content"] for line in lines if line["role"] == "user"]
    assert "The user answered: no, only old_total" in read_back
    events = (log / "resumed-1" / "events.jsonl").read_text().splitlines()
    [finished] = [e for e in map(json.loads, events) if e["kind"] == "paor_finished"]
    assert finished["end"] == "goal_achieved"
