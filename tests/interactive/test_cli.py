"""``conclave chat`` (the interactive agent headless) and ``conclave project init``, as a user
runs them: the installed command, in a temporary directory, on zero-latency scripted agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from conclave.actors.session.entries import AssistantReply, RunRecorded, UserTurn
from conclave.actors.session.store import read_session
from tests.cli.helpers import (
    CONCLAVE,
    conclave,
    fast_agents,
    read_stderr_until,
    start,
    write_config,
)


def _config(tmp_path: Path, **interactive: object) -> Path:
    return write_config(tmp_path / "c.yaml", fast_agents(3), interactive_mode=interactive)


def test_chat_answers_a_short_question_and_launches_no_run(tmp_path: Path) -> None:
    done = conclave("chat", "--config", str(_config(tmp_path)), "Which agents?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "No run needed: 3 agents are configured: agent-1, agent-2, agent-3."
    )
    assert not (tmp_path / ".conclave" / "runs").exists()


def test_without_yes_a_run_needing_approval_is_refused_and_the_agent_says_so(
    tmp_path: Path,
) -> None:
    done = conclave("chat", "--config", str(_config(tmp_path)), "Write a poem", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "pass --yes to approve runs" in done.stdout
    assert not (tmp_path / ".conclave" / "runs").exists()


def test_yes_approves_and_the_json_lists_each_turns_runs(tmp_path: Path) -> None:
    config = str(_config(tmp_path))
    done = conclave(
        "chat", "--config", config, "--yes", "--output-format", "json", "Write a poem",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [turn] = json.loads(done.stdout)["turns"]
    [run] = turn["runs"]
    assert run["status"] == "completed"
    assert (tmp_path / ".conclave" / "runs" / run["run_id"] / "events.jsonl").is_file()
    assert f"run {run['run_id']} ended completed" in done.stderr


def test_no_approval_required_runs_without_yes(tmp_path: Path) -> None:
    config = str(_config(tmp_path, require_approval=False))
    done = conclave("chat", "--config", config, "Write a poem", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ended completed" in done.stdout


def test_stdin_lines_are_turns_of_one_conversation(tmp_path: Path) -> None:
    config = str(_config(tmp_path))
    done = conclave(
        "chat", "--config", config, "--output-format", "json", cwd=tmp_path,
        stdin="Which agents?\n\nWhat is trio?\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [t["message"] for t in json.loads(done.stdout)["turns"]] == [
        "Which agents?",
        "What is trio?",
    ]


def test_a_disabled_interactive_mode_is_a_usage_error(tmp_path: Path) -> None:
    done = conclave("chat", "--config", str(_config(tmp_path, enabled=False)), "hi", cwd=tmp_path)
    assert done.returncode == 2
    assert "interactive_mode.enabled: false" in done.stderr
    assert "Traceback" not in done.stderr


def test_chat_without_a_message_is_a_usage_error(tmp_path: Path) -> None:
    done = conclave("chat", "--config", str(_config(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2
    assert "no message given" in done.stderr


def test_project_init_creates_its_files(tmp_path: Path) -> None:
    done = conclave("project", "init", "atlas", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "atlas"
    assert sorted(os.listdir(root)) == ["CONTEXT.md", "deliverables", "filepaths.json", "runs"]
    assert json.loads((root / "filepaths.json").read_text()) == {}


def test_project_init_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "atlas").mkdir()
    (tmp_path / "atlas" / "x").write_text("")
    done = conclave("project", "init", "atlas", cwd=tmp_path)
    assert done.returncode == 2
    assert "not an empty directory" in done.stderr


def test_runs_made_in_a_project_are_linked_under_runs(tmp_path: Path) -> None:
    config = str(_config(tmp_path))
    assert conclave("project", "init", "atlas", cwd=tmp_path).returncode == 0
    root = tmp_path / "atlas"
    done = conclave(
        "chat", "--config", config, "--yes", "--output-format", "json", "Write a poem", cwd=root
    )
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)["turns"][0]["runs"]
    link = root / "runs" / run["run_id"]
    assert link.is_symlink() and (link / "events.jsonl").is_file()


def test_a_conclave_run_in_a_project_is_linked_under_runs(tmp_path: Path) -> None:
    config = str(write_config(tmp_path / "plain.yaml", fast_agents(2)))
    assert conclave("project", "init", "atlas", cwd=tmp_path).returncode == 0
    root = tmp_path / "atlas"
    done = conclave("run", "--config", config, "--output-format", "json", "A task", cwd=root)
    assert done.returncode == 0, done.stderr
    log_dir = Path(json.loads(done.stdout)["log_dir"])
    link = root / "runs" / log_dir.name
    assert link.is_symlink() and link.resolve() == (root / log_dir).resolve()


def test_ctrl_c_ends_the_run_in_progress_cancelled_and_exits_130(tmp_path: Path) -> None:
    slow = [{"id": f"agent-{i}", "seed": i, "latency": 30} for i in (1, 2)]
    config = write_config(tmp_path / "slow.yaml", slow, interactive_mode={"backend": {}})
    process = start("chat", "--config", str(config), "--yes", "Write a poem", cwd=tmp_path)
    read_stderr_until(process, "logging to")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "stopped after 0 of 1 turns" in stderr
    [log] = tmp_path.glob(".conclave/runs/*/events.jsonl")
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["kind"], last["termination"]) == ("run_ended", "cancelled")


def test_chat_turns_are_a_session_that_continue_goes_on_with(tmp_path: Path) -> None:
    config = str(_config(tmp_path))
    first = conclave(
        "chat", "--config", config, "--yes", "--output-format", "json", "Write a poem",
        cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    assert f"conclave chat --resume {session_id}" in first.stderr
    again = conclave(
        "chat", "--config", config, "-c", "--output-format", "json", "What did I ask before?",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    output = json.loads(again.stdout)
    assert output["session_id"] == session_id
    assert output["turns"][0]["reply"] == "No run needed: earlier you asked “Write a poem”."
    [path] = tmp_path.glob(".conclave/sessions/*/session.jsonl")
    entries = read_session(path).entries
    recorded = (UserTurn, RunRecorded, AssistantReply)
    kinds = [type(e) for e in entries if isinstance(e, recorded)]
    assert kinds == [UserTurn, RunRecorded, AssistantReply, UserTurn, AssistantReply]


def test_resume_of_an_unknown_session_is_a_usage_error(tmp_path: Path) -> None:
    done = conclave(
        "chat", "--config", str(_config(tmp_path)), "--resume", "nope", "hi", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_a_usage_error_with_json_output_is_one_error_object_on_stdout(tmp_path: Path) -> None:
    done = conclave(
        "chat", "--config", str(_config(tmp_path)), "--output-format", "json",
        "--resume", "nope", "hi", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    error = json.loads(done.stdout)
    assert error["exit_code"] == 2 and "no session 'nope'" in error["error"]


def test_chat_with_an_interactive_backend_missing_its_key_is_a_usage_error(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, backend={"type": "openai", "model": "m"})
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [str(CONCLAVE), "chat", "--config", str(config), "hi"],
        cwd=tmp_path,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "no API key for the interactive agent" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_turn_the_agent_cannot_answer_exits_1_saying_why(tmp_path: Path) -> None:
    config = _config(tmp_path, backend={"type": "scripted", "misbehave": "error"})
    done = conclave("chat", "--config", str(config), "Which agents?", cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert "conclave chat: the turn failed: 3 tries failed" in done.stderr
    assert "Traceback" not in done.stderr


def test_project_init_with_a_name_too_long_exits_2_naming_it(tmp_path: Path) -> None:
    done = conclave("project", "init", "a" * 300, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == (
        f"conclave project init: cannot create the project {'a' * 300}: File name too long; "
        "choose another name\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_chat_refuses_a_log_dir_whose_name_is_too_long_before_any_turn(tmp_path: Path) -> None:
    done = conclave(
        "chat", "--config", str(_config(tmp_path)), "--log-dir", "a" * 300, "Which agents?",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"conclave chat: --log-dir {'a' * 300}: cannot use it (File name too long); "
        "pass a writable directory\n"
    )
    assert not (tmp_path / ".conclave" / "sessions").exists()  # no turn was recorded


def test_chat_makes_no_log_directory_for_a_conversation_that_launches_no_run(
    tmp_path: Path,
) -> None:
    done = conclave(
        "chat", "--config", str(_config(tmp_path)), "--log-dir", "logs", "Which agents?",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "logs").exists()
