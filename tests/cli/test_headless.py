"""The installed command, as a user runs it: ``conclave run TASK``, ``conclave -p TASK``,
``echo TASK | conclave``, and Ctrl+C (SIGINT) during a run."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import CONCLAVE, REQUIRED_KEYS, TASK, conclave, parse_json, write_config


def test_conclave_run_task(fast_config: Path, tmp_path: Path) -> None:
    done = conclave(
        "run", "--config", str(fast_config), "--output-format", "json", TASK, cwd=tmp_path
    )

    assert done.returncode == ExitCode.OK, done.stderr
    data = parse_json(done.stdout)
    assert set(data) >= REQUIRED_KEYS
    assert TASK in data["final_answer"]


def test_conclave_dash_p_task_is_run(fast_config: Path, tmp_path: Path) -> None:
    done = conclave(
        "-p", TASK, "--config", str(fast_config), "--output-format", "json", cwd=tmp_path
    )

    assert done.returncode == ExitCode.OK, done.stderr
    data = parse_json(done.stdout)
    assert data["termination"] == "completed"
    assert TASK in data["final_answer"]


def test_a_task_piped_on_stdin_is_run(fast_config: Path, tmp_path: Path) -> None:
    done = conclave(
        "--config", str(fast_config), "--output-format", "json", cwd=tmp_path, stdin=TASK + "\n"
    )

    assert done.returncode == ExitCode.OK, done.stderr
    data = parse_json(done.stdout)
    assert data["termination"] == "completed"
    assert TASK in data["final_answer"]


def test_without_a_log_dir_the_run_logs_under_dot_conclave_runs(
    fast_config: Path, tmp_path: Path
) -> None:
    done = conclave(
        "run", "--config", str(fast_config), "--output-format", "json", TASK, cwd=tmp_path
    )

    log_dir = Path(parse_json(done.stdout)["log_dir"])
    assert log_dir.parent == Path(".conclave/runs")
    assert (tmp_path / log_dir / "events.jsonl").is_file()


def test_sigint_cancels_the_run_exits_130_and_prints_the_best_answer_so_far(
    tmp_path: Path,
) -> None:
    cfg = write_config(
        tmp_path / "slow.yaml", [{"id": "quick", "latency": 0}, {"id": "slow", "latency": 5}]
    )
    log_dir = tmp_path / "run"
    process = subprocess.Popen(
        [
            str(CONCLAVE),
            "run",
            "--config",
            str(cfg),
            "--log-dir",
            str(log_dir),
            "--output-format",
            "json",
            "--verbose",
            TASK,
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        progress = []
        for line in process.stderr:  # the verbose progress, as it happens
            progress.append(line)
            if "quick answered agent1.1" in line:
                break
        process.send_signal(signal.SIGINT)
        out, rest = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == ExitCode.CANCELLED, "".join(progress) + rest
    data = parse_json(out)
    assert data["termination"] == "cancelled"
    assert data["winner"] == "quick"
    assert data["final_answer"] == data["answers"][0]["content"]
    assert [a["agent"] for a in data["answers"]] == ["quick"]
    assert "run ended: cancelled" in rest
    assert (log_dir / "events.jsonl").is_file()
    replay = conclave("replay", str(log_dir / "events.jsonl"), cwd=tmp_path)
    assert replay.returncode == ExitCode.OK
    assert "run ended: cancelled" in replay.stdout
