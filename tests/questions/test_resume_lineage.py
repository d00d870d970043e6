"""A resumed run is one run across two logs: the paused run's, never written again, and the
resumed run's in ``RUN_DIR/resumed-N``, which starts at the resume and names the paused one
(``run_resumed``). Replay shows the whole run, and a run that pauses again after a resume is
resumed with everything coordination decided before the first pause."""

from __future__ import annotations

import json
import re
import shutil
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
from tests.cli.helpers import TASK, write_config
from tests.questions.helpers import CRITICAL, MINOR, Person


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _presenting(tmp_path: Path, *questions: dict[str, Any]) -> Path:
    """Two agents that vote for agent2, whose presenter asks ``questions`` in turn."""
    steps = [{"tool": "ask_user", "arguments": q} for q in questions]
    agents = [
        {"id": f"a{i}", "seed": i, "latency": 0, "vote": "agent2"}
        | {"presentation_tool_steps": steps}
        for i in (1, 2)
    ]
    return write_config(tmp_path / "present.yaml", agents, final_answer_strategy="synthesize")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _paused_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cfg: Path, *answers: str
) -> Path:
    """The log directory of the last of the resumes that answer ``answers`` in turn."""
    log = tmp_path / "paused"
    code, _ = _run(
        capsys, "run", "--config", str(cfg), "--log-dir", str(log), "--on-question", "pause", TASK
    )
    assert code == ExitCode.PAUSED
    for answer in answers:
        _run(capsys, "resume", str(log), "--answer", answer)
        log = log / "resumed-1"
    return log


def _replay(capsys: pytest.CaptureFixture[str], log: Path) -> tuple[int, list[str], str]:
    code = main(["replay", str(log)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_replay_of_a_resumed_run_shows_the_answers_and_votes_before_the_pause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    resumed = _paused_and_resumed(tmp_path, capsys, _presenting(tmp_path, CRITICAL), "delete")

    code, lines, err = _replay(capsys, resumed)

    assert code == ExitCode.OK
    text = "\n".join(lines)
    before, _, after = text.partition("── resumed in ")
    assert "a1 answered agent1.1" in before
    assert "a2 voted for agent2.1" in before
    assert "a2 asks (critical): Delete the old migrations?" in before
    assert "run ended: paused" in before
    assert "a2's question answered by the user: delete" in after
    assert "run ended: completed" in after
    assert "a resumed run: shown from the start of the paused run" in err


def test_replay_of_a_resumed_run_times_it_from_the_paused_runs_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    resumed = _paused_and_resumed(tmp_path, capsys, _presenting(tmp_path, CRITICAL), "delete")

    _, lines, _ = _replay(capsys, resumed)

    split = next(i for i, line in enumerate(lines) if line.startswith("── resumed in "))
    before, after = _times(lines[:split]), _times(lines[split:])
    assert before and after
    assert min(after) >= max(before)


def _times(lines: list[str]) -> list[float]:
    return [float(m.group(1)) for line in lines if (m := re.match(r"^\[ *([\d.]+)s\]", line))]


def test_replay_of_a_resumed_run_tables_its_agents_over_the_whole_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paused = _paused_and_resumed(tmp_path, capsys, _presenting(tmp_path, CRITICAL))
    _, before, _ = _replay(capsys, paused)
    _run(capsys, "resume", str(paused), "--answer", "delete")

    _, whole, _ = _replay(capsys, paused / "resumed-1")

    def calls(lines: list[str], agent: str) -> tuple[int, str, str]:
        row = next(line.split() for line in lines if line.startswith(f"{agent} "))
        return int(row[2]), row[-2], row[-1]  # LLM calls, answer, vote

    assert calls(whole, "a1") == calls(before, "a1")  # its answer and vote, from the pause
    presented, answer, vote = calls(whole, "a2")
    assert presented == calls(before, "a2")[0] + 1  # the presentation's last call, resumed
    assert (answer, vote) == ("agent2.1", "agent2.1")


def test_a_resume_never_writes_the_paused_runs_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paused = _paused_and_resumed(tmp_path, capsys, _presenting(tmp_path, CRITICAL))
    before = (paused / "events.jsonl").read_bytes()

    _run(capsys, "resume", str(paused), "--answer", "delete")

    assert (paused / "events.jsonl").read_bytes() == before
    first = (paused / "resumed-1" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    recorded = json.loads(first[1])
    assert recorded["kind"] == "run_resumed"
    assert (recorded["resumed_from"], recorded["question_id"]) == ("..", "q1")


def test_a_presentation_that_pauses_again_is_resumed_without_running_a_round_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _presenting(tmp_path, CRITICAL, MINOR)
    once = _paused_and_resumed(tmp_path, capsys, cfg, "delete")

    code, resumed = _run(capsys, "resume", str(once), "--answer", "tabs")
    spec = RunSpec(task=TASK, config=load_config(cfg), questions=Person("delete"))
    direct = trio.run(run, spec, clock=trio.testing.MockClock(autojump_threshold=0))

    assert code == ExitCode.OK
    lines = list(read_transcripts(once / "resumed-1" / "transcripts.jsonl"))
    assert {line["purpose"] for line in lines} == {"present"}  # no answer round ran again
    assert [a["content"] for a in resumed["answers"]] == [a.content for a in direct.answers]
    assert resumed["votes"] == direct.votes


def test_replay_of_a_resumed_run_whose_paused_log_is_gone_shows_the_resume_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    resumed = _paused_and_resumed(tmp_path, capsys, _presenting(tmp_path, CRITICAL), "delete")
    moved = shutil.move(resumed, tmp_path / "alone")

    code, lines, err = _replay(capsys, Path(moved))

    assert code == ExitCode.OK
    assert "a2's question answered by the user: delete" in "\n".join(lines)
    assert "whose events.jsonl is not there" in err
    assert "showing the run from the resume on" in err


def test_resuming_a_run_whose_earlier_log_is_gone_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    once = _paused_and_resumed(tmp_path, capsys, _presenting(tmp_path, CRITICAL, MINOR), "delete")
    (once.parent / "events.jsonl").unlink()

    code = main(["resume", str(once), "--answer", "tabs"])

    assert code == ExitCode.USAGE
    assert "whose events.jsonl is not there" in capsys.readouterr().err
