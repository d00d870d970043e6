"""Signals, as a user sends them: Ctrl+C (SIGINT) and SIGHUP (a closed terminal) end a
command with exit code 130, SIGTERM with 143. Before a run has started they end it quietly;
during a run, the best answer so far is printed and the log records how the run ended."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import (
    CONCLAVE,
    TASK,
    finish,
    parse_json,
    read_stderr_until,
    start,
    wait_until_reading_stdin,
    write_config,
)

EXPECTED = {
    signal.SIGINT: ExitCode.CANCELLED,
    signal.SIGHUP: ExitCode.CANCELLED,
    signal.SIGTERM: ExitCode.TERMINATED,
}


@pytest.mark.parametrize("signum", list(EXPECTED), ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_starting_up_exits_quietly_with_its_code(
    signum: signal.Signals, tmp_path: Path
) -> None:
    process = start("run", cwd=tmp_path, stdin=subprocess.PIPE)  # waits for a task on stdin
    wait_until_reading_stdin(process)

    process.send_signal(signum)
    out, err = finish(process)

    assert process.returncode == EXPECTED[signum]
    assert (out, err) == ("", "")


_SIGNAL_WHILE_IMPORTING = """
import builtins, os, runpy, sys

signum, script, *args = int(sys.argv[1]), sys.argv[2], *sys.argv[3:]
real_import = builtins.__import__
sent = []


def importing(name, *rest, **named):
    if name == "conclave.ui.cli" and not sent:  # the command's modules start loading
        sent.append(signum)
        os.kill(os.getpid(), signum)
    return real_import(name, *rest, **named)


builtins.__import__ = importing
sys.argv = [script, *args]
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize("signum", list(EXPECTED), ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_the_commands_modules_load_exits_quietly_with_its_code(
    signum: signal.Signals, tmp_path: Path
) -> None:
    # The installed script, run as it is, with the signal sent at the first import of the
    # command's modules: the moment a Ctrl+C right after start lands, every time.
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_WHILE_IMPORTING, str(int(signum)), str(CONCLAVE), "run"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == EXPECTED[signum], done.stderr
    assert (done.stdout, done.stderr) == ("", "")


def test_a_signal_while_the_commands_modules_load_prints_one_json_error_object(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [
            sys.executable, "-c", _SIGNAL_WHILE_IMPORTING, str(int(signal.SIGINT)),
            str(CONCLAVE), "run", "--output-format", "json",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip

    assert done.returncode == ExitCode.CANCELLED, done.stderr
    assert parse_json(done.stdout) == {"error": "cancelled", "exit_code": 130}


def test_a_signal_while_starting_up_prints_one_json_error_object(tmp_path: Path) -> None:
    process = start("run", "--output-format", "json", cwd=tmp_path, stdin=subprocess.PIPE)
    wait_until_reading_stdin(process)

    process.send_signal(signal.SIGTERM)
    out, _ = finish(process)

    assert process.returncode == ExitCode.TERMINATED
    assert parse_json(out) == {"error": "terminated", "exit_code": 143}


def test_ctrl_c_as_the_run_starts_exits_130_with_one_json_object(tmp_path: Path) -> None:
    # Many agents, so the signal lands while the run is being set up.
    process = start(
        "run", "--agents", "2000", "--visibility", "ring", "--output-format", "json", TASK,
        cwd=tmp_path,
    )  # fmt: skip
    read_stderr_until(process, "conclave: logging to")

    process.send_signal(signal.SIGINT)
    out, err = finish(process, timeout=120)

    assert process.returncode == ExitCode.CANCELLED, err
    assert "Traceback" not in err
    data = json.loads(out)
    assert data.get("termination", "cancelled") == "cancelled"


def _slow_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A run whose quick agent has answered and whose slow agent will take 30 s more."""
    cfg = write_config(
        tmp_path / "slow.yaml", [{"id": "quick", "latency": 0}, {"id": "slow", "latency": 30}]
    )
    log_dir = tmp_path / "run"
    process = start(
        "run", "--config", str(cfg), "--log-dir", str(log_dir), "--output-format", "json",
        "--verbose", TASK,
        cwd=tmp_path,
    )  # fmt: skip
    read_stderr_until(process, "quick answered agent1.1")
    return process, log_dir


def test_sigterm_ends_the_run_with_143_and_the_best_answer_so_far(tmp_path: Path) -> None:
    process, _ = _slow_run(tmp_path)

    process.send_signal(signal.SIGTERM)
    out, err = finish(process)

    assert process.returncode == ExitCode.TERMINATED, err
    data = parse_json(out)
    assert data["termination"] == "cancelled"
    assert data["winner"] == "quick"
    assert data["final_answer"] == data["answers"][0]["content"]


def test_sighup_ends_the_run_like_ctrl_c_and_the_log_records_it(tmp_path: Path) -> None:
    process, log_dir = _slow_run(tmp_path)

    process.send_signal(signal.SIGHUP)
    out, err = finish(process)

    assert process.returncode == ExitCode.CANCELLED, err
    assert parse_json(out)["winner"] == "quick"
    events = [json.loads(line) for line in (log_dir / "events.jsonl").read_text().splitlines()]
    [ended] = [e for e in events if e["kind"] == "run_ended"]
    assert ended["termination"] == "cancelled"
