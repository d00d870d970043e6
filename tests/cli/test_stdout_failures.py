"""Output that fails. A full stdout (``> /dev/full``) or one closed before the command
started (``>&-``) ends the command with one line on stderr and exit code 1, never a crash
inside the run; a reader that went away (``| head``) ends it quietly with the run's own exit
code; a closed stderr loses the messages but never sends them to stdout; an event log that
cannot be written is reported once on stderr and the run goes on to print its result."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import CONCLAVE, TASK, close_stdout, parse_json, with_reader_gone


@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
def test_a_full_stdout_ends_with_one_line_and_exit_code_1(
    output_format: str, fast_config: Path, tmp_path: Path
) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(CONCLAVE), "run", "--config", str(fast_config), "--log-dir", "run",
             "--output-format", output_format, TASK],
            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=60,
        )  # fmt: skip

    assert done.returncode == ExitCode.FAILED
    [message] = [line for line in done.stderr.splitlines() if "stdout" in line]
    assert message.startswith("conclave: cannot write the result to stdout (No space left")
    assert "its log is in run" in message
    assert "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr


def _close_stderr() -> None:
    os.close(2)


@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
def test_a_closed_stdout_ends_with_one_line_and_exit_code_1(
    output_format: str, fast_config: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(CONCLAVE), "run", "--config", str(fast_config), "--log-dir", "run",
         "--output-format", output_format, TASK],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, timeout=60, preexec_fn=close_stdout,
    )  # fmt: skip

    assert done.returncode == ExitCode.FAILED, done.stderr
    [message] = [line for line in done.stderr.splitlines() if "stdout" in line]
    assert message == (
        "conclave: cannot write the result to stdout (it is closed); "
        "the run ended completed and its log is in run"
    )
    assert "Traceback" not in done.stderr
    assert "internal error" not in done.stderr


def test_a_closed_stderr_keeps_stdout_the_json_result_alone(
    fast_config: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(CONCLAVE), "run", "--config", str(fast_config), "--output-format", "json", TASK],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, timeout=60, preexec_fn=_close_stderr,
    )  # fmt: skip

    assert done.returncode == ExitCode.OK
    assert json.loads(done.stdout)["termination"] == "completed"


def _a_session(config: Path, cwd: Path) -> None:
    """A run in ``cwd``, so that ``conclave sessions`` there has one to list."""
    started = subprocess.run(
        [str(CONCLAVE), "run", "--config", str(config), TASK],
        cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
    )  # fmt: skip
    assert started.returncode == ExitCode.OK


def test_sessions_with_a_closed_stdout_says_it_cannot_list_them_and_exits_1(
    fast_config: Path, tmp_path: Path
) -> None:
    _a_session(fast_config, tmp_path)

    done = subprocess.run(
        [str(CONCLAVE), "sessions"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, timeout=60, preexec_fn=close_stdout,
    )  # fmt: skip

    assert done.returncode == ExitCode.FAILED
    assert done.stderr == "conclave sessions: cannot write the list to stdout (it is closed)\n"


def test_sessions_with_a_full_stdout_says_it_cannot_list_them_and_exits_1(
    fast_config: Path, tmp_path: Path
) -> None:
    _a_session(fast_config, tmp_path)

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(CONCLAVE), "sessions", "--json"],
            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=60,
        )  # fmt: skip

    assert done.returncode == ExitCode.FAILED
    assert done.stderr == (
        "conclave sessions: cannot write the list to stdout (No space left on device)\n"
    )


def test_a_reader_that_left_ends_the_command_quietly_with_the_runs_exit_code(
    fast_config: Path, tmp_path: Path
) -> None:
    code, err = with_reader_gone(
        "run", "--config", str(fast_config), "--output-format", "json", TASK, cwd=tmp_path
    )

    assert code == ExitCode.OK
    assert "stdout" not in err
    assert "Traceback" not in err
    assert "BrokenPipeError" not in err


def test_a_failing_event_log_is_reported_once_and_the_run_still_prints_its_result(
    fast_config: Path, tmp_path: Path
) -> None:
    limit = 4096

    def small_files_only() -> None:  # what a disk filling up looks like to a writer
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [str(CONCLAVE), "run", "--config", str(fast_config), "--log-dir", "run",
         "--output-format", "json", TASK],
        cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        preexec_fn=small_files_only,
    )  # fmt: skip

    assert done.returncode == ExitCode.OK, done.stderr
    assert parse_json(done.stdout)["termination"] == "completed"
    [report] = [line for line in done.stderr.splitlines() if "event log" in line]
    assert report.startswith("conclave: event log run/events.jsonl stopped at line ")
    assert "File too large" in report
    log = (tmp_path / "run" / "events.jsonl").read_bytes()
    assert 0 < len(log) <= limit
    assert log.endswith(b"\n")  # cut back to its last whole line
