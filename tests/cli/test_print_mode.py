"""Print mode: with stdin not a terminal and no task or subcommand (``echo TASK | conclave``),
the task is read from stdin and the run is headless, exactly as ``conclave run``. An empty
stdin is an error: ``Error: stdin was empty`` on stderr, exit 1. Every test goes through a
real pipe to the installed command."""

from __future__ import annotations

import json
from pathlib import Path

from conclave.actors.planning.plan import parse_plan, render_plan
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, conclave, parse_json, write_config


def test_a_piped_task_runs_headless_with_the_answer_on_stdout(
    fast_config: Path, tmp_path: Path
) -> None:
    done = conclave("--config", str(fast_config), cwd=tmp_path, stdin=TASK + "\n")

    assert done.returncode == ExitCode.OK, done.stderr
    assert TASK in done.stdout
    assert "completed: winner agent-" in done.stderr


def test_a_piped_task_with_no_arguments_at_all_runs(tmp_path: Path) -> None:
    done = conclave(cwd=tmp_path, stdin=TASK)

    assert done.returncode == ExitCode.OK, done.stderr
    assert TASK in done.stdout


def test_print_mode_takes_the_flags_of_run(fast_config: Path, tmp_path: Path) -> None:
    done = conclave(
        "--config", str(fast_config), "--output-format", "json", cwd=tmp_path, stdin=TASK
    )

    data = parse_json(done.stdout)
    assert done.returncode == ExitCode.OK
    assert data["termination"] == "completed"
    assert TASK in data["final_answer"]


def test_print_mode_in_plan_mode_prints_the_plan(tmp_path: Path) -> None:
    answer = json.dumps({"goal": "Paperclips", "steps": [{"action": "Bend one"}]})
    config = write_config(
        tmp_path / "planner.yaml", [{"id": "planner", "latency": 0, "answer_text": answer}]
    )

    done = conclave("--config", str(config), "--mode", "plan", cwd=tmp_path, stdin=TASK)

    plan = parse_plan(answer)
    assert plan is not None
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout == render_plan(plan) + "\n"


def test_an_empty_stdin_is_an_error_exit_1(tmp_path: Path) -> None:
    done = conclave(cwd=tmp_path, stdin="")

    assert done.returncode == ExitCode.FAILED
    assert done.stderr.startswith("Error: stdin was empty")
    assert done.stdout == ""


def test_a_blank_stdin_is_empty(tmp_path: Path) -> None:
    done = conclave(cwd=tmp_path, stdin=" \n\t\n")

    assert done.returncode == ExitCode.FAILED
    assert done.stderr.startswith("Error: stdin was empty")


def test_an_empty_stdin_starts_no_run(tmp_path: Path) -> None:
    conclave(cwd=tmp_path, stdin="")

    assert not (tmp_path / ".conclave" / "runs").exists()


def test_an_empty_stdin_with_json_output_is_one_error_object(tmp_path: Path) -> None:
    done = conclave("--output-format", "json", cwd=tmp_path, stdin="")

    data = parse_json(done.stdout)
    assert done.returncode == ExitCode.FAILED
    assert data["exit_code"] == ExitCode.FAILED
    assert data["error"].startswith("Error: stdin was empty")


def test_a_task_argument_wins_over_an_empty_stdin(fast_config: Path, tmp_path: Path) -> None:
    done = conclave("--config", str(fast_config), TASK, cwd=tmp_path, stdin="")

    assert done.returncode == ExitCode.OK, done.stderr
    assert TASK in done.stdout
