"""``conclave resume RUN_DIR --answer VALUE`` goes on with a run paused on a question (exit
4) from its log directory alone, and ends as a direct answer would have: the agent reads the
answer as its call's result and goes on from where it was, doing nothing twice."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from conclave.actors.agent.transcript_log import read_transcripts
from conclave.actors.run.driver import RunSpec, run
from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, conclave, start, write_config
from tests.questions.helpers import CRITICAL, MINOR, Person


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _config(tmp_path: Path, n: int = 1, *, presenter_asks: bool = False) -> Path:
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    agents = [
        {"id": f"a{i}", "seed": i, "latency": 0, "vote": "agent1"}
        | ({"presentation_tool_steps": [ask]} if presenter_asks else {"tool_steps": [ask]})
        for i in range(1, n + 1)
    ]
    return write_config(tmp_path / "ask.yaml", agents)


def _json_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _paused(tmp_path: Path, capsys: pytest.CaptureFixture[str], cfg: Path) -> Path:
    log = tmp_path / "paused"
    code, _ = _json_run(
        capsys, "run", "--config", str(cfg), "--log-dir", str(log), "--on-question", "pause", TASK
    )
    assert code == ExitCode.PAUSED
    return log


def test_resume_ends_as_a_direct_answer_would_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config(tmp_path)
    log = _paused(tmp_path, capsys, cfg)

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "delete")
    spec = RunSpec(task=TASK, config=load_config(cfg), questions=Person("delete"))
    direct = trio.run(run, spec, clock=trio.testing.MockClock(autojump_threshold=0))

    assert code == ExitCode.OK
    assert resumed["termination"] == "completed"
    assert resumed["final_answer"] == direct.final_answer
    assert [a["content"] for a in resumed["answers"]] == [a.content for a in direct.answers]
    assert resumed["log_dir"] == str(log / "resumed-1")


def test_the_resumed_agent_reads_the_answer_as_its_calls_result_and_asks_nothing_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _config(tmp_path))

    main(["resume", str(log), "--answer", "delete"])

    lines = list(read_transcripts(log / "resumed-1" / "transcripts.jsonl"))
    asks = [c for line in lines for c in line.get("tool_calls", []) if c["name"] == "ask_user"]
    answers = [line for line in lines if line["role"] == "tool"]
    assert len(asks) == 1  # the paused call, answered: not asked a second time
    assert [line["content"] for line in answers] == ["The user answered: delete"]
    assert answers[0]["tool_call_id"] == asks[0]["id"]


def test_a_paused_run_resumes_in_a_new_process_from_its_files_alone(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    log = tmp_path / "paused"
    paused = conclave(
        "run",
        "--config",
        str(cfg),
        "--log-dir",
        str(log),
        "--on-question",
        "pause",
        TASK,
        cwd=tmp_path,
    )
    assert paused.returncode == ExitCode.PAUSED, paused.stderr
    assert "paused: needs the user" in paused.stderr

    resumed = conclave("resume", str(log), "--answer", "keep", cwd=tmp_path)

    assert resumed.returncode == ExitCode.OK, resumed.stderr
    assert resumed.stdout.strip()


def test_a_directory_that_did_not_pause_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["resume", str(tmp_path), "--answer", "x"])

    assert code == ExitCode.USAGE
    assert "is not a paused run (no paused.json)" in capsys.readouterr().err


def test_a_run_paused_in_its_presentation_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _config(tmp_path, 2, presenter_asks=True))

    code = main(["resume", str(log), "--answer", "keep"])

    assert code == ExitCode.USAGE
    assert "only a run paused in its single agent's first round" in capsys.readouterr().err


def test_a_run_that_pauses_again_is_resumed_again_with_distinct_question_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = [{"tool": "ask_user", "arguments": q} for q in (CRITICAL, MINOR)]
    cfg = write_config(tmp_path / "two.yaml", [{"id": "a1", "latency": 0, "tool_steps": steps}])
    log = _paused(tmp_path, capsys, cfg)

    first, again = _json_run(capsys, "resume", str(log), "--answer", "delete")
    second, done = _json_run(capsys, "resume", str(log / "resumed-1"), "--answer", "tabs")

    assert first == ExitCode.PAUSED
    assert again["pending_question"]["question_id"] == "q2"
    assert again["pending_question"]["question"]["question"] == MINOR["question"]
    assert second == ExitCode.OK
    assert done["termination"] == "completed"
    lines = list(read_transcripts(log / "resumed-1" / "resumed-1" / "transcripts.jsonl"))
    assert [line["content"] for line in lines if line["role"] == "tool"] == [
        "The user answered: delete",
        "The user answered: tabs",
    ]


def test_a_resume_killed_with_sigkill_loses_nothing_and_the_next_resume_completes(
    tmp_path: Path,
) -> None:
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    agents = [{"id": "a1", "latency": 0.5, "tool_steps": [ask]}]
    cfg = write_config(tmp_path / "slow.yaml", agents)
    log = tmp_path / "paused"
    paused = conclave(
        "run",
        "--config",
        str(cfg),
        "--log-dir",
        str(log),
        "--on-question",
        "pause",
        TASK,
        cwd=tmp_path,
    )
    assert paused.returncode == ExitCode.PAUSED, paused.stderr
    kept = {p.name: p.read_bytes() for p in log.iterdir() if p.is_file()}

    resuming = start("resume", str(log), "--answer", "delete", cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not (log / "resumed-1" / "events.jsonl").exists():
        assert time.monotonic() < deadline, "the resume never started its run"
        time.sleep(0.01)
    resuming.send_signal(signal.SIGKILL)
    resuming.wait(timeout=30)
    again = conclave("resume", str(log), "--answer", "delete", cwd=tmp_path)

    assert resuming.returncode == -signal.SIGKILL
    assert {p.name: p.read_bytes() for p in log.iterdir() if p.is_file()} == kept
    assert again.returncode == ExitCode.OK, again.stderr
    assert (log / "resumed-2" / "events.jsonl").exists()
