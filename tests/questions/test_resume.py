"""``conclave resume RUN_DIR --answer VALUE`` goes on with a run paused on a question (exit
4) from its log directory alone, and ends as a direct answer would have: the agent reads the
answer as its call's result and goes on from where it was, doing nothing twice."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import yaml

from conclave.actors.agent.transcript_log import read_transcripts
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import Termination
from conclave.actors.session.history import Conversation, read_conversation
from conclave.actors.session.store import read_session, session_path
from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.questions import CONFIG_COPY
from conclave.ui.sessions import sessions_root
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


def _presenting(tmp_path: Path, answers: int = 1) -> Path:
    """Three agents giving ``answers`` answers each, whose presenter asks before it
    synthesizes every answer."""
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    agents = [
        {"id": f"a{i}", "seed": i, "latency": 0, "vote": "agent2", "answers": answers}
        | {"presentation_tool_steps": [ask]}
        for i in (1, 2, 3)
    ]
    return write_config(tmp_path / "present.yaml", agents, final_answer_strategy="synthesize")


def _refining(tmp_path: Path) -> Path:
    """One agent with tools (its rounds show new answers as they come: ``inject``) that
    gives two answers, asking before each."""
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    agents = [{"id": "a1", "latency": 0, "answers": 2, "tool_steps": [ask]}]
    return write_config(tmp_path / "refine.yaml", agents, tools=True)


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


def test_a_run_paused_before_transcript_format_2_resumes_as_one_paused_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = _paused(tmp_path, capsys, _config(tmp_path))
    before = tmp_path / "paused-before"
    shutil.copytree(now, before)
    path = before / "transcripts.jsonl"
    # Format 1, as main wrote it up to fd27407: no header, a line per message.
    format1 = [json.dumps(line) + "\n" for line in read_transcripts(path)]
    path.write_text("".join(format1), encoding="utf-8")

    code_now, resumed_now = _json_run(capsys, "resume", str(now), "--answer", "delete")
    code_before, resumed_before = _json_run(capsys, "resume", str(before), "--answer", "delete")

    assert code_now == code_before == ExitCode.OK
    assert resumed_before["final_answer"] == resumed_now["final_answer"]
    assert list(read_transcripts(before / "resumed-1" / "transcripts.jsonl")) == list(
        read_transcripts(now / "resumed-1" / "transcripts.jsonl")
    )


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


def test_a_presentation_paused_in_a_multi_agent_run_resumes_to_the_direct_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _presenting(tmp_path)
    log = _paused(tmp_path, capsys, cfg)

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "delete")
    spec = RunSpec(task=TASK, config=load_config(cfg), questions=Person("delete"))
    direct = trio.run(run, spec, clock=trio.testing.MockClock(autojump_threshold=0))

    assert code == ExitCode.OK
    assert resumed["termination"] == "completed"
    assert "Synthesis" in resumed["final_answer"]  # the presentation ran, from every answer
    assert resumed["final_answer"] == direct.final_answer
    assert [a["content"] for a in resumed["answers"]] == [a.content for a in direct.answers]
    assert resumed["votes"] == direct.votes
    assert (resumed["winner"], resumed["presenter"]) == (direct.winner, direct.presenter)


def test_a_resumed_presentation_answers_the_paused_call_and_runs_no_round_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _presenting(tmp_path))

    main(["resume", str(log), "--answer", "delete"])

    lines = list(read_transcripts(log / "resumed-1" / "transcripts.jsonl"))
    asks = [c for line in lines for c in line.get("tool_calls", []) if c["name"] == "ask_user"]
    answers = [line for line in lines if line["role"] == "tool"]
    assert {line["purpose"] for line in lines} == {"present"}
    assert len(asks) == 1
    assert [line["content"] for line in answers] == ["The user answered: delete"]
    assert answers[0]["tool_call_id"] == asks[0]["id"]


def test_a_single_agent_paused_in_a_later_round_resumes_to_the_direct_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _refining(tmp_path)
    log = _paused(tmp_path, capsys, cfg)
    first, again = _json_run(capsys, "resume", str(log), "--answer", "delete")

    code, resumed = _json_run(capsys, "resume", str(log / "resumed-1"), "--answer", "delete")
    spec = RunSpec(task=TASK, config=load_config(cfg), questions=Person("delete"))
    direct = trio.run(run, spec, clock=trio.testing.MockClock(autojump_threshold=0))

    assert first == ExitCode.PAUSED
    assert len(again["answers"]) == 1  # paused in round 2, its first answer given
    assert code == ExitCode.OK
    assert resumed["final_answer"] == direct.final_answer
    assert [a["label"] for a in resumed["answers"]] == ["agent1.1", "agent1.2"]
    assert [a["content"] for a in resumed["answers"]] == [a.content for a in direct.answers]


def test_a_later_round_resumes_in_the_round_it_paused_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _refining(tmp_path))
    main(["resume", str(log), "--answer", "delete"])

    main(["resume", str(log / "resumed-1"), "--answer", "delete"])

    lines = list(read_transcripts(log / "resumed-1" / "resumed-1" / "transcripts.jsonl"))
    rounds = [line["round"] for line in lines if line["purpose"] == "round"]
    roles = [line["role"] for line in lines]
    answered = roles.index("tool")
    assert rounds[0] == 2
    assert lines[answered]["content"] == "The user answered: delete"
    # Its own first answer was shown by the round's prompt: not shown again as news.
    assert roles[answered + 1] == "assistant"


def test_a_log_whose_question_was_answered_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _config(tmp_path))
    answered = {"kind": "question_answered", "at": 1.0, "agent": "a1", "question_id": "q1"}
    with (log / "events.jsonl").open("a", encoding="utf-8") as events:
        events.write(json.dumps(answered | {"answer": "keep", "source": "user"}) + "\n")

    code = main(["resume", str(log), "--answer", "keep"])

    assert code == ExitCode.USAGE
    assert "the run waits on no question (it did not pause)" in capsys.readouterr().err


def test_a_presentation_asked_again_resumes_from_its_last_attempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _presenting(tmp_path))
    path = log / "transcripts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if '"purpose":"present"' in line)
    presenter = {k: v for k, v in json.loads(lines[first]).items() if k != "pieces"}
    earlier = [  # an attempt that ended when its presenter crashed, under the same round
        presenter | {"messages": [{"role": role, "content": text} for role, text in said]}
        for said in ((("system", "earlier"), ("user", "earlier")), (("assistant", "lost"),))
    ]
    lines[first:first] = [json.dumps(e) + "\n" for e in earlier]
    path.write_text("".join(lines), encoding="utf-8")

    code = main(["resume", str(log), "--answer", "delete"])

    resumed = list(read_transcripts(log / "resumed-1" / "transcripts.jsonl"))
    assert code == ExitCode.OK
    assert [line["role"] for line in resumed].count("system") == 1
    assert all(line.get("content") not in ("earlier", "lost") for line in resumed)


def test_a_paused_run_without_the_askers_transcript_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _config(tmp_path))
    (log / "transcripts.jsonl").write_text("", encoding="utf-8")

    code = main(["resume", str(log), "--answer", "keep"])

    assert code == ExitCode.USAGE
    assert "transcripts.jsonl has no line of a1, which asked" in capsys.readouterr().err


def test_a_question_asked_in_a_round_of_a_multi_agent_run_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _config(tmp_path))
    events = log / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line["kind"] == "run_started":  # as if a second agent had run beside it
            line["agents"].append("a2")
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    code = main(["resume", str(log), "--answer", "keep"])

    assert code == ExitCode.USAGE
    assert "a1 asked in an answer round of a run of 2 agents" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        ({"rename": "a3"}, "the paused run's agent a3 is not an agent of the config now"),
        ({"skip_voting": True}, "'s vote for agent2.2 does not replay"),
        (
            {"max_new_answers_per_agent": 1},
            ".2 does not replay: You have given the maximum of 1 answer(s); call vote instead; "
            "restore",
        ),
    ],
    ids=["agent renamed", "voting skipped", "answer cap lowered"],
)
def test_a_paused_run_whose_config_changed_is_refused_saying_what_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], differs: str
) -> None:
    log = _paused(tmp_path, capsys, _presenting(tmp_path, answers=2))
    kept = log / CONFIG_COPY  # the config the resume reads: the copy the pause kept
    data = yaml.safe_load(kept.read_text(encoding="utf-8"))
    renamed = change.pop("rename", None)
    data["agents"] = [a | {"id": "a9"} if a["id"] == renamed else a for a in data["agents"]]
    data["orchestrator"] |= change
    kept.write_text(yaml.safe_dump(data), encoding="utf-8")

    code = main(["resume", str(log), "--answer", "keep"])

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "does not go on under its config now" in err
    assert differs in err


def test_a_presentation_after_answers_that_counted_as_votes_resumes_to_the_direct_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    agents = [
        {"id": f"a{i}", "latency": 0, "answer_text": "Use it as a hook."}
        | {"presentation_tool_steps": [ask]}
        for i in (1, 2, 3)
    ]
    cfg = write_config(tmp_path / "same.yaml", agents)
    log = _paused(tmp_path, capsys, cfg)
    events = [json.loads(line) for line in (log / "events.jsonl").open(encoding="utf-8")]

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "delete")
    spec = RunSpec(task=TASK, config=load_config(cfg), questions=Person("delete"))
    direct = trio.run(run, spec, clock=trio.testing.MockClock(autojump_threshold=0))

    assert any(e["kind"] == "vote_added" and e["same_answer"] for e in events)
    assert code == ExitCode.OK
    assert resumed["final_answer"] == direct.final_answer
    assert resumed["votes"] == direct.votes
    assert len(resumed["answers"]) == len(direct.answers) == 1


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


_ASK = {"tool": "ask_user", "arguments": CRITICAL}
_SLOW = {
    # Where a run pauses: its agents (0.5 s a call, so a resume is killed mid-run), and how
    # many resumes it takes to get there.
    "first round": ([{"id": "a1", "latency": 0.5, "tool_steps": [_ASK]}], 0),
    "presentation": (
        [
            {"id": f"a{i}", "latency": 0.5, "vote": "agent1", "presentation_tool_steps": [_ASK]}
            for i in (1, 2)
        ],
        0,
    ),
    "later round": ([{"id": "a1", "latency": 0.5, "answers": 2, "tool_steps": [_ASK]}], 1),
}


@pytest.mark.parametrize("where", sorted(_SLOW))
def test_a_resume_killed_with_sigkill_loses_nothing_and_the_next_resume_completes(
    tmp_path: Path, where: str
) -> None:
    agents, resumes = _SLOW[where]
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
    for _ in range(resumes):
        paused = conclave("resume", str(log), "--answer", "delete", cwd=tmp_path)
        log = log / "resumed-1"
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


def _session_of(log: Path) -> Conversation:
    paused = json.loads((log / "paused.json").read_text(encoding="utf-8"))
    entries = read_session(session_path(sessions_root(), paused["session"])).entries
    return read_conversation(entries)


def test_a_resumed_run_answers_its_paused_runs_turn_in_the_same_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _presenting(tmp_path))

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "delete")

    conversation = _session_of(log)
    assert code == ExitCode.OK
    [exchange] = conversation.exchanges
    assert exchange.user.text == TASK
    assert exchange.run is not None
    assert exchange.run.termination is Termination.COMPLETED
    assert exchange.run.log_dir == str(log / "resumed-1")
    assert [t.final_answer for t in conversation.history()] == [resumed["final_answer"]]


def test_a_resumed_run_whose_session_is_gone_is_recorded_in_a_new_one_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _paused(tmp_path, capsys, _config(tmp_path))
    paused = json.loads((log / "paused.json").read_text(encoding="utf-8"))
    shutil.rmtree(sessions_root() / paused["session"])

    code = main(["resume", str(log), "--answer", "delete"])

    assert code == ExitCode.OK
    assert f"session {paused['session']} is gone" in capsys.readouterr().err
    [new] = sessions_root().iterdir()
    assert new.name != paused["session"]


def test_a_resumed_agent_goes_on_in_a_copy_of_its_workspace_with_the_files_it_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write = {"tool": "write_file", "arguments": {"path": "notes.txt", "content": "kept"}}
    steps = [write, {"tool": "ask_user", "arguments": CRITICAL}]
    agents = [{"id": "a1", "latency": 0, "tool_steps": steps}]
    log = _paused(tmp_path, capsys, write_config(tmp_path / "w.yaml", agents, tools=True))

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "delete")

    assert code == ExitCode.OK
    assert (Path(resumed["workspace_path"]) / "notes.txt").read_text() == "kept"
    assert (log / "workspaces" / "a1" / "notes.txt").read_text() == "kept"  # only read
    text = (log / "resumed-1" / "transcripts.jsonl").read_text(encoding="utf-8")
    assert str(log / "resumed-1" / "workspaces" / "a1") in text  # its prompt names the copy
    assert str(log / "workspaces" / "a1") not in text


def test_a_resumed_presentation_has_the_answers_snapshots_of_the_paused_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write = {"tool": "write_file", "arguments": {"path": "{agent}.txt", "content": "{me}"}}
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    agents = [
        {"id": f"a{i}", "latency": 0, "vote": "agent1", "tool_steps": [write]}
        | {"presentation_tool_steps": [ask]}
        for i in (1, 2)
    ]
    log = _paused(tmp_path, capsys, write_config(tmp_path / "p.yaml", agents, tools=True))

    code, resumed = _json_run(capsys, "resume", str(log), "--answer", "delete")

    assert code == ExitCode.OK
    snapshots = log / "resumed-1" / "snapshots"
    assert (snapshots / "agent1.1" / "a1.txt").read_text() == "agent1"
    assert (snapshots / "agent2.1" / "a2.txt").read_text() == "agent2"
    assert (Path(resumed["workspace_path"]) / "a1.txt").read_text() == "agent1"
