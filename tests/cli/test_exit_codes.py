"""Exit codes: 0 completed, 1 failed (no answer at all), 2 usage or config error (the
message names the bad flag or field and lists the valid values), 3 timed out."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, conclave, fast_agents, parse_json, write_config


def test_a_completed_run_exits_0_with_the_answer_on_stdout(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", str(tmp_path / "run"), TASK])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert TASK in out
    assert "completed: winner agent-" in err
    assert "(decided by votes)" in err


def test_a_run_with_no_answer_at_all_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "broken.yaml",
        [
            {"id": "a", "latency": 0, "misbehave": "error"},
            {"id": "b", "latency": 0, "misbehave": "hang"},
        ],
        round_timeout=0.05,
    )

    code = main(["run", "--config", str(cfg), TASK])

    out, err = capsys.readouterr()
    assert code == ExitCode.FAILED
    assert out == ""
    assert "conclave: the run produced no answer" in err
    assert "failed: winner - (no answer)" in err


def test_a_timed_out_run_exits_3_with_the_best_answer_so_far(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "slow.yaml",
        [{"id": "quick", "latency": 0}, {"id": "slow", "latency": 30}],
    )

    code = main(["run", "--config", str(cfg), "--timeout", "0.5", "--output-format", "json", TASK])

    assert code == ExitCode.TIMEOUT
    out, _ = capsys.readouterr()
    assert '"termination": "timeout"' in out
    assert '"winner": "quick"' in out


def test_a_timed_out_run_without_any_answer_still_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "slow.yaml", [{"id": "slow", "latency": 30}])

    code = main(["run", "--config", str(cfg), "--timeout", "0.2", TASK])

    assert code == ExitCode.TIMEOUT
    assert "the run produced no answer" in capsys.readouterr().err


def test_a_timed_out_run_without_any_answer_says_so_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "slow.yaml", [{"id": "slow", "latency": 30}])

    code = main(["run", "--config", str(cfg), "--timeout", "0.2", "--output-format", "json", TASK])

    data = parse_json(capsys.readouterr().out)
    assert code == ExitCode.TIMEOUT
    assert data["termination"] == "timeout"
    assert data["final_answer"] is None
    assert data["decided_by"] is None


@pytest.mark.parametrize(
    ("flag", "value", "valid"),
    [
        ("--refinement", "maybe", ["on", "off"]),
        ("--agent-mode", "solo", ["single", "multi"]),
        ("--final-answer-strategy", "best", ["winner_reuse", "winner_present", "synthesize"]),
        ("--output-format", "yaml", ["text", "json", "stream-json"]),
        ("--in-flight-policy", "later", ["cancel", "finish"]),
        ("--visibility", "star", ["all, ring, islands:K (K >= 1)"]),
        ("--agents", "0", ["a whole number >= 1"]),
        ("--timeout", "-1", ["seconds > 0"]),
    ],
)
def test_a_bad_flag_value_exits_2_naming_the_flag_and_the_valid_values(
    flag: str, value: str, valid: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", flag, value, TASK])

    assert code == ExitCode.USAGE
    [error] = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert f"argument {flag}:" in error
    assert value in error
    assert all(choice in error for choice in valid)


def test_a_bad_config_exits_2_naming_the_field_and_the_valid_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "bad.yaml", fast_agents(2), final_answer_strategy="best")

    code = main(["run", "--config", str(cfg), TASK])

    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert f"conclave: {cfg}:" in err
    assert "orchestrator.final_answer_strategy:" in err
    assert "is not one of: winner_reuse, winner_present, synthesize" in err


def test_a_missing_config_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--config", str(tmp_path / "missing.yaml"), TASK])

    assert code == ExitCode.USAGE
    assert "cannot read config" in capsys.readouterr().err


def test_a_directory_as_config_exits_2_asking_for_a_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "team.yaml").write_text("agents: []\n")
    code = main(["run", "--config", str(tmp_path), TASK])

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"config {tmp_path} is a directory; pass a config file (.yaml) (in it: team.yaml)" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "2"], "--agents applies only to the default scripted agents"),
        (["--agent", "agent-1"], "--agent picks the agent of single mode; add --agent-mode single"),
        (
            ["--agent-mode", "single", "--agent", "nobody"],
            "--agent: active agent 'nobody' is not configured; "
            "configured agents: agent-1, agent-2, agent-3",
        ),
    ],
    ids=["agents-with-config", "agent-without-single-mode", "unknown-agent"],
)
def test_conflicting_flags_exit_2_saying_what_to_do(
    fast_config: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), *args, TASK])

    assert code == ExitCode.USAGE
    assert message in capsys.readouterr().err


def test_a_log_dir_that_already_holds_a_run_exits_2(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "run"
    assert (
        main(["run", "--config", str(fast_config), "--log-dir", str(log_dir), TASK]) == ExitCode.OK
    )
    capsys.readouterr()

    code = main(["run", "--config", str(fast_config), "--log-dir", str(log_dir), TASK])

    assert code == ExitCode.USAGE
    assert "already holds a run" in capsys.readouterr().err


def test_no_task_and_an_empty_stdin_exits_1(fast_config: Path, tmp_path: Path) -> None:
    done = conclave("run", "--config", str(fast_config), cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert done.stderr.startswith("Error: stdin was empty")


def test_a_usage_error_from_the_installed_command_exits_2(tmp_path: Path) -> None:
    done = conclave("run", "--refinement", "maybe", TASK, cwd=tmp_path)

    assert done.returncode == ExitCode.USAGE
    assert "argument --refinement: invalid choice: 'maybe'" in done.stderr
    assert done.stdout == ""
