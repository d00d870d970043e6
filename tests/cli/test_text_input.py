"""Text that is not UTF-8, and input too large to be a task. A task (argument or stdin) is
decoded with each bad byte replaced by U+FFFD and stderr names the first one; a config file
is refused with exit code 2 naming the byte's position. Neither ever crashes a run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import CONCLAVE, TASK, parse_json


def _run(
    *args: str | bytes, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(CONCLAVE), *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )


def test_a_task_argument_that_is_not_utf8_runs_with_the_byte_replaced(
    fast_config: Path, tmp_path: Path
) -> None:
    done = _run(
        "run", "--config", str(fast_config), "--output-format", "json", b"caf\xe9 menu",
        cwd=tmp_path,
    )  # fmt: skip

    err = done.stderr.decode()
    assert done.returncode == ExitCode.OK, err
    assert "the task is not valid UTF-8 (byte 0xe9 at position 3)" in err
    data = parse_json(done.stdout.decode())
    assert "caf\ufffd menu" in data["final_answer"]
    assert data["failed_agents"] == {}


def test_a_task_on_stdin_that_is_not_utf8_runs_with_the_byte_replaced(
    fast_config: Path, tmp_path: Path
) -> None:
    done = _run(
        "run", "--config", str(fast_config), "--output-format", "json",
        cwd=tmp_path, stdin=b"plan a \xff\xfe launch\n",
    )  # fmt: skip

    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert b"(byte 0xff at position 7)" in done.stderr
    assert "plan a \ufffd\ufffd launch" in parse_json(done.stdout.decode())["final_answer"]


def test_a_task_larger_than_a_mebibyte_is_refused_without_reading_it_all(
    tmp_path: Path,
) -> None:
    with open("/dev/zero", "rb") as zeros:
        done = subprocess.run(
            [str(CONCLAVE), "run"], cwd=tmp_path, stdin=zeros, capture_output=True, timeout=60
        )

    assert done.returncode == ExitCode.USAGE
    assert b"the task is larger than 1 MiB" in done.stderr


def test_a_config_that_is_not_utf8_exits_2_naming_the_byte(tmp_path: Path) -> None:
    cfg = tmp_path / "latin1.yaml"
    cfg.write_bytes(b"agents: [{id: a, persona: caf\xe9}]\n")

    done = _run("run", "--config", str(cfg), TASK, cwd=tmp_path)

    assert done.returncode == ExitCode.USAGE
    assert b"byte 0xe9 at position 29 (line 1, column 30) is not valid UTF-8" in done.stderr
    assert b"Traceback" not in done.stderr


def test_a_log_dir_whose_name_is_not_utf8_is_shown_escaped(
    fast_config: Path, tmp_path: Path
) -> None:
    done = _run(
        "run", "--config", str(fast_config), "--output-format", "json", "--log-dir",
        b"run-\xff", TASK,
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert b"logging to run-\\xff/events.jsonl" in done.stderr
    assert (tmp_path / "run-\udcff" / "events.jsonl").is_file()
    parse_json(done.stdout.decode())
