"""``conclave bench`` refuses unwritable destinations before measuring anything, and says so
when event logs stopped while measuring (a disk that filled up)."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from conclave.benchmarks.bench_args import ReportPathChanged, write_report
from tests.cli.helpers import CONCLAVE, conclave


def test_an_unwritable_log_root_is_refused_at_once_with_exit_code_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    done = conclave("bench", "--quick", "--log-root", str(blocker / "logs"), cwd=tmp_path)

    assert done.returncode == 2
    assert "--log-root" in done.stderr and "choose a writable one" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing was measured


def test_runs_whose_event_logs_stopped_are_named_and_the_bench_exits_1(tmp_path: Path) -> None:
    def logs_stop_at_256_kb() -> None:  # past the probe, short of a 100-agent run's log
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    done = subprocess.run(
        [str(CONCLAVE), "bench", "--quick", "--scenario", "big", "--log-root", "logs",
         "--json", "report.json"],
        cwd=tmp_path, preexec_fn=logs_stop_at_256_kb, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip

    assert done.returncode == 1, done.stderr
    warning = done.stderr.splitlines()[-1]
    assert warning.startswith("conclave bench: the event logs of ")
    assert "stopped at line" in warning and "choose another --log-root" in warning
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["event_logs"]["failed_runs"] > 0
    stopped = [row for row in report["scenarios"]["big"] if row["log_failures"]]
    assert stopped and all(row["agents"] == 100 for row in stopped)


def test_an_unwritable_json_report_path_is_refused_at_once_with_exit_code_2(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    done = conclave("bench", "--quick", "--json", str(blocker / "out.json"), cwd=tmp_path)

    assert done.returncode == 2
    assert "--json" in done.stderr
    assert not (tmp_path / ".conclave").exists()  # checked before any log directory is made


def _refused(done: subprocess.CompletedProcess[str], tmp_path: Path) -> str:
    """The one-line message of a bench refused before it measured anything."""
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert not (tmp_path / ".conclave").exists()
    [line] = done.stderr.splitlines()
    return line


def test_a_directory_as_the_json_report_is_refused_before_measuring(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()

    done = conclave("bench", "--quick", "--json", "reports", cwd=tmp_path)

    assert _refused(done, tmp_path) == (
        "conclave bench: --json reports is a directory; pass the path of a new or regular file"
    )


def test_a_device_or_pipe_as_the_json_report_is_refused_before_measuring(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "pipe")

    done = conclave("bench", "--quick", "--json", "pipe", cwd=tmp_path)

    assert "is not a regular file (a device, a pipe or a socket)" in _refused(done, tmp_path)


def test_a_symlink_as_the_json_report_is_refused_and_its_target_left_alone(
    tmp_path: Path,
) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "link.json").symlink_to(target)

    done = conclave("bench", "--quick", "--json", "link.json", cwd=tmp_path)

    assert "--json link.json is a symbolic link" in _refused(done, tmp_path)
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("flag", ["--json", "--log-root"])
def test_an_empty_path_is_refused(flag: str, tmp_path: Path) -> None:
    done = conclave("bench", "--quick", flag, "", cwd=tmp_path)

    assert f"{flag} is empty" in _refused(done, tmp_path)


def test_a_log_root_too_full_to_write_is_refused_before_measuring(tmp_path: Path) -> None:
    def small_files_only() -> None:  # what a full disk looks like to a writer
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    done = subprocess.run(
        [str(CONCLAVE), "bench", "--quick", "--log-root", "logs"],
        cwd=tmp_path, preexec_fn=small_files_only, capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert done.returncode == 2
    assert done.stderr == (
        "conclave bench: --log-root: cannot write in logs (File too large); choose a writable one\n"
    )


def test_the_report_replaces_the_old_one_whole_and_leaves_no_temporary_file(
    tmp_path: Path,
) -> None:
    report = tmp_path / "load_bench.json"
    report.write_text('{"old": true}')

    write_report(report, '{"new": true}')

    assert report.read_text() == '{"new": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["load_bench.json"]


def test_a_report_path_that_became_a_directory_while_measuring_is_not_replaced(
    tmp_path: Path,
) -> None:
    (tmp_path / "load_bench.json").mkdir()

    with pytest.raises(ReportPathChanged, match="is a directory: it changed while measuring"):
        write_report(tmp_path / "load_bench.json", "{}")

    assert [p.name for p in tmp_path.iterdir()] == ["load_bench.json"]


def test_a_report_that_fails_to_write_leaves_the_old_one_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "load_bench.json"
    report.write_text("old")

    def disk_full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_report(report, "new")

    assert report.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["load_bench.json"]
