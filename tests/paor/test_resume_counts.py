"""A PAOR round paused on its reflection's question and resumed goes on counting its
iterations from the transcript: the resumed round reports the iterations it really took, and
its ``max_iterations`` counts those made before the pause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

QUESTION = "Which dir?"


def _config(tmp_path: Path, **backend: Any) -> Path:
    agent = {
        "id": "p",
        "loop": "paor",
        "paor": {"max_iterations": 2},
        "backend": {"type": "scripted", "latency": 0, "paor_question": QUESTION, **backend},
    }
    path = tmp_path / "asks.yaml"
    path.write_text(yaml.safe_dump({"agents": [agent], "orchestrator": {"quiet_period": None}}))
    return path


def _paused_then_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Path, *flags: str
) -> tuple[int, Path]:
    log = tmp_path / "log"
    argv = ["run", "--config", str(config), "--log-dir", str(log), *flags]
    assert main([*argv, "--on-question", "pause", "Fix"]) == ExitCode.PAUSED
    code = main(["resume", str(log), "--answer", "src"])
    capsys.readouterr()
    return code, log / "resumed-1"


def _events(log: Path, kind: str) -> list[dict[str, Any]]:
    lines = (log / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["kind"] == kind]


def test_the_resumed_round_reports_the_iterations_it_really_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, resumed = _paused_then_resumed(tmp_path, capsys, _config(tmp_path))

    assert code == ExitCode.OK
    [finished] = _events(resumed, "paor_finished")
    assert (finished["end"], finished["iterations"]) == ("goal_achieved", 2)
    planned = [e["iteration"] for e in _events(resumed, "paor_state_changed")]
    assert set(planned) == {2}


def test_max_iterations_counts_the_iterations_made_before_the_pause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    failing = [{"tool": "run_shell", "arguments": {"command": "exit 3"}}]
    config = _config(tmp_path, tool_steps=failing)

    code, resumed = _paused_then_resumed(tmp_path, capsys, config, "--context", f"{repo}:w")

    assert code == ExitCode.MAX_ITERATIONS
    plans = [e for e in _events(resumed, "paor_state_changed") if e["target"] == "planning"]
    assert [e["iteration"] for e in plans] == [2]
    [finished] = _events(resumed, "paor_finished")
    assert finished["summary"].startswith("Stopped after 2 iterations (the limit)")


def test_the_verbose_summary_reports_the_plan_made_before_the_pause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, resumed = _paused_then_resumed(tmp_path, capsys, _config(tmp_path))

    [finished] = _events(resumed, "paor_finished")
    assert "Iteration 1\nGoal:" in finished["detail"]
    assert "Iteration 2\nGoal:" in finished["detail"]
