"""The tables' stdout, when it cannot take them: a closed stdout (``>&-``) or a full one
(``> /dev/full``) is said on stderr and exits 1, as ``conclave run`` does for its result
(``conclave batch``: the results are in RESULTS all the same; ``conclave report``: likewise).
Real processes, as only a process of its own can start with its stdout closed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conclave.ui.exit_codes import ExitCode
from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.cli.helpers import CONCLAVE, close_stdout, with_reader_gone


def _batch(tmp_path: Path, config: Path, **popen: Any) -> subprocess.CompletedProcess[str]:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    return subprocess.run(
        [str(CONCLAVE), "batch", str(source), "--out", "out.jsonl", "--config", str(config)],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
        **popen,
    )  # fmt: skip


def test_a_closed_stdout_is_said_on_stderr_and_exits_1(tmp_path: Path, fast_config: Path) -> None:
    done = _batch(tmp_path, fast_config, preexec_fn=close_stdout)

    assert done.returncode == ExitCode.FAILED
    [message] = [line for line in done.stderr.splitlines() if "stdout" in line]
    assert message.startswith(
        "conclave batch: cannot write the summary to stdout (it is closed); the results are "
        "in out.jsonl"
    )
    assert "Traceback" not in done.stderr
    assert len(results(tmp_path / "out.jsonl")) == 2


def test_a_full_stdout_is_said_on_stderr_and_exits_1(tmp_path: Path, fast_config: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _batch(tmp_path, fast_config, stdout=full)

    assert done.returncode == ExitCode.FAILED
    [message] = [line for line in done.stderr.splitlines() if "stdout" in line]
    assert message.startswith(
        "conclave batch: cannot write the summary to stdout (No space left on device); the "
        "results are in out.jsonl"
    )
    assert "internal error" not in done.stderr and "Exception ignored" not in done.stderr


def test_a_reader_that_left_ends_the_batch_quietly_with_its_own_exit_code(
    tmp_path: Path, fast_config: Path
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [*tasks(1), "{"])  # a bad line: exit 2
    code, err = with_reader_gone(
        "batch", str(source), "--out", "out.jsonl", "--config", str(fast_config),
        "--summary-json", "summary.json", cwd=tmp_path, timeout=120,
    )  # fmt: skip

    assert code == ExitCode.USAGE
    assert "stdout" not in err and "Traceback" not in err and "Exception ignored" not in err
    assert (tmp_path / "summary.json").exists()


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "full"])
def test_a_report_whose_stdout_cannot_take_its_tables_says_so_and_exits_1(
    tmp_path: Path, fast_config: Path, capsys: pytest.CaptureFixture[str], closed: bool
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))
    assert batch(capsys, source, "--out", "out.jsonl", "--config", fast_config).code == 0

    with open("/dev/full", "w") as full:
        stdout: dict[str, Any] = {"preexec_fn": close_stdout} if closed else {"stdout": full}
        done = subprocess.run(
            [str(CONCLAVE), "report", "out.jsonl"], cwd=tmp_path, stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, timeout=60, **stdout,
        )  # fmt: skip

    assert done.returncode == ExitCode.FAILED
    why = "it is closed" if closed else "No space left on device"
    assert f"conclave report: cannot write the tables to stdout ({why}); --html" in done.stderr
    assert "internal error" not in done.stderr and "Exception ignored" not in done.stderr
