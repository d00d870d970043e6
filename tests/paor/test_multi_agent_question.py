"""A PAOR reflection that needs the user in a multi-agent answer round: its agents record
assumptions instead of asking (``record_assumption`` stands for ``ask_user``), so the
question is recorded as an assumption the result shows, and the round goes on with the
safest course instead of ending ``needs_user``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.actors.agent.transcript_log import read_transcripts
from conclave.actors.human.questions import ASSUMED_INSTEAD, NO_DEFAULT
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

QUESTION = "Which dir?"


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], **backend: Any
) -> tuple[Path, dict[str, Any]]:
    asking = {"type": "scripted", "latency": 0, **(backend or {"paor_question": QUESTION})}
    agents = [
        {"id": "w1", "loop": "paor", "backend": asking},
        {"id": "w2", "backend": {"type": "scripted", "latency": 0}},
    ]
    config = tmp_path / "panel.yaml"
    config.write_text(yaml.safe_dump({"agents": agents, "orchestrator": {"quiet_period": None}}))
    log = tmp_path / "log"
    argv = ["run", "--config", str(config), "--log-dir", str(log), "--on-question", "pause"]
    code = main([*argv, "--output-format", "json", "Fix"])
    assert code == ExitCode.OK
    return log, json.loads(capsys.readouterr().out)


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (log / "events.jsonl").read_text().splitlines()]


def test_the_question_is_recorded_as_an_assumption_the_result_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, result = _run(tmp_path, capsys)

    assert result["termination"] == "completed"
    assert result["assumptions"] == [
        {"agent": "w1", "question": QUESTION, "assumption": NO_DEFAULT}
    ]


def test_the_round_goes_on_instead_of_ending_needs_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = _run(tmp_path, capsys)

    [finished] = [e for e in _events(log) if e["kind"] == "paor_finished"]
    assert (finished["agent"], finished["end"], finished["iterations"]) == (
        "w1",
        "goal_achieved",
        2,
    )
    moves = [e["target"] for e in _events(log) if e["kind"] == "paor_state_changed"]
    assert "awaiting_user" not in moves


def test_the_model_is_told_to_go_on_with_the_safest_course(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = _run(tmp_path, capsys)

    lines = list(read_transcripts(log / "transcripts.jsonl"))
    told = [line["content"] for line in lines if line["role"] == "user"]
    assert ASSUMED_INSTEAD in told
    assert "safest course" in ASSUMED_INSTEAD


def test_a_stuck_rounds_question_is_recorded_as_an_assumption_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, result = _run(tmp_path, capsys, paor_stuck=2)

    [assumed] = result["assumptions"]
    assert assumed["agent"] == "w1"
    assert assumed["question"].startswith("I am stuck and a new plan did not help.")
    [finished] = [e for e in _events(log) if e["kind"] == "paor_finished"]
    assert finished["end"] == "goal_achieved"
