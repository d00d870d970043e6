"""A PAOR agent (``loop: paor``) whose reflection needs the user pauses the run (exit 4);
``conclave resume --answer`` then ends it as a direct answer would have: the same final
answer, the same answers, the same end of its PAOR loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import yaml

from conclave.actors.agent.transcript_log import read_transcripts
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import RunResult
from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.questions.helpers import Person

TASK = "rename old_total to compute_total"
ANSWER = "no, only old_total"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _config(tmp_path: Path, **backend: Any) -> Path:
    """One PAOR agent on the scripted backend, whose reflections ask as ``backend`` says."""
    path = tmp_path / "paor.yaml"
    agent = {"id": "p", "loop": "paor", "backend": {"type": "scripted", "latency": 0, **backend}}
    path.write_text(
        yaml.safe_dump({"agents": [agent], "orchestrator": {"quiet_period": None}}),
        encoding="utf-8",
    )
    return path


def _json_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _resumed(tmp_path: Path, capsys: pytest.CaptureFixture[str], cfg: Path) -> dict[str, Any]:
    log = tmp_path / "paused"
    code, _ = _json_run(
        capsys, "run", "--config", str(cfg), "--log-dir", str(log), "--on-question", "pause", TASK
    )
    assert code == ExitCode.PAUSED
    code, resumed = _json_run(capsys, "resume", str(log), "--answer", ANSWER)
    assert code == ExitCode.OK
    return resumed


def _direct(cfg: Path, log_dir: Path) -> RunResult:
    spec = RunSpec(task=TASK, config=load_config(cfg), questions=Person(ANSWER), log_dir=log_dir)
    return trio.run(run, spec, clock=trio.testing.MockClock(autojump_threshold=0))


def _said(log_dir: Path | str) -> list[tuple[str, str, tuple[str, ...]]]:
    """What the agent's calls exchanged, in order: each message's role, text and calls."""
    return [
        (
            line["role"],
            line.get("content") or "",
            tuple(c["name"] for c in line.get("tool_calls") or ()),
        )
        for line in read_transcripts(Path(log_dir) / "transcripts.jsonl")
    ]


def _paor_end(log_dir: str) -> list[str]:
    lines = (Path(log_dir) / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [e["end"] for e in map(json.loads, lines) if e["kind"] == "paor_finished"]


@pytest.mark.parametrize(
    "asks",
    [{"paor_question": "Rename the test helpers too?"}, {"paor_stuck": 2}],
    ids=["needs_user", "stuck"],
)
def test_a_paused_paor_agent_resumes_to_the_direct_answers_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], asks: dict[str, Any]
) -> None:
    cfg = _config(tmp_path, **asks)

    resumed = _resumed(tmp_path, capsys, cfg)
    direct = _direct(cfg, tmp_path / "direct")

    assert resumed["termination"] == direct.termination.value == "completed"
    assert resumed["final_answer"] == direct.final_answer
    assert [a["content"] for a in resumed["answers"]] == [a.content for a in direct.answers]
    assert _paor_end(resumed["log_dir"]) == ["goal_achieved"]


@pytest.mark.parametrize(
    "asks",
    [{"paor_question": "Rename the test helpers too?"}, {"paor_stuck": 2}],
    ids=["needs_user", "stuck"],
)
def test_a_resumed_paor_agent_has_read_what_a_directly_answered_one_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], asks: dict[str, Any]
) -> None:
    cfg = _config(tmp_path, **asks)

    resumed = _resumed(tmp_path, capsys, cfg)
    _direct(cfg, tmp_path / "direct")

    said = _said(resumed["log_dir"])
    assert said == _said(tmp_path / "direct")
    assert any(ANSWER in text for _, text, _ in said)
