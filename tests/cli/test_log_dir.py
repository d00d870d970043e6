"""Where a run's event log goes: a directory that cannot hold it exits 2 with a message
(naming ``--log-dir`` only when the user gave it); a directory that already holds a run is
refused; the log's path is printed on stderr as the run starts, so a killed run can be
found and replayed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.log_dir import resolve_log_root
from tests.cli.helpers import TASK, conclave, finish, read_stderr_until, start, write_config


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[Path]:
    """``directory``, unwritable even for root (who ignores modes): immutable where it may
    set the flag, read-only by its mode otherwise."""
    directory.mkdir(exist_ok=True)
    directory.chmod(0o555)
    immutable = os.geteuid() == 0
    if immutable:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
    try:
        with pytest.raises(OSError):
            (directory / "probe").touch()
        yield directory
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


def test_an_empty_log_dir_exits_2(fast_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", "", TASK])

    assert code == ExitCode.USAGE
    assert "--log-dir is empty; pass the directory for the run's event log" in (
        capsys.readouterr().err
    )


def test_a_log_dir_under_proc_exits_2_naming_it(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", "/proc/x", TASK])

    assert code == ExitCode.USAGE
    assert "conclave: --log-dir /proc/x: cannot create it" in capsys.readouterr().err


def test_proc_itself_as_the_log_dir_exits_2_naming_it(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", "/proc", TASK])

    assert code == ExitCode.USAGE
    assert "conclave: --log-dir /proc: cannot write in it" in capsys.readouterr().err


def test_a_read_only_log_dir_exits_2_naming_it(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with read_only(tmp_path / "ro") as directory:
        code = main(["run", "--config", str(fast_config), "--log-dir", str(directory), TASK])

    assert code == ExitCode.USAGE
    assert f"conclave: --log-dir {directory}: cannot write in it" in capsys.readouterr().err


def test_an_unwritable_default_log_dir_exits_2_without_naming_a_flag_not_given(
    fast_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with read_only(tmp_path / "ro") as directory:
        monkeypatch.chdir(directory)
        done = conclave("run", "--config", str(fast_config), TASK, cwd=directory)

    assert done.returncode == ExitCode.USAGE
    assert "the run's log directory .conclave/runs/" in done.stderr
    assert "run conclave from a writable directory" in done.stderr
    assert "--log-dir" not in done.stderr


def test_a_dangling_events_symlink_in_the_log_dir_is_refused(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "run"
    log_dir.mkdir()
    (log_dir / "events.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")

    code = main(["run", "--config", str(fast_config), "--log-dir", str(log_dir), TASK])

    assert code == ExitCode.USAGE
    assert "already holds a run" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere.jsonl").exists()


def test_the_log_path_is_printed_when_the_run_starts_so_a_killed_run_can_be_replayed(
    tmp_path: Path,
) -> None:
    cfg = write_config(
        tmp_path / "slow.yaml",
        [{"id": "quick", "latency": 0}, {"id": "slow", "latency": 30}],
        first_vote_wait=0.5,  # quick votes before slow answers
    )
    process = start("run", "--config", str(cfg), "--verbose", TASK, cwd=tmp_path)
    [announced] = read_stderr_until(process, "conclave: logging to ")[-1:]
    read_stderr_until(process, "quick voted for agent1.1")  # so the answer is in the log

    process.send_signal(signal.SIGKILL)
    finish(process)

    log = tmp_path / announced.removeprefix("conclave: logging to ").strip()
    assert log.parent.parent == tmp_path / ".conclave" / "runs"
    replay = conclave("replay", str(log), cwd=tmp_path)
    assert "quick answered agent1.1" in replay.stdout
    assert "it was interrupted" in replay.stdout


def _delivered_lines(log_dir: Path) -> int:
    lines = (log_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return sum('"kind":"delivered"' in line for line in lines)


def test_a_run_logs_no_plain_deliveries(fast_config: Path, tmp_path: Path) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", str(tmp_path / "run"), TASK])

    assert code == ExitCode.OK
    assert _delivered_lines(tmp_path / "run") == 0


def test_log_deliveries_writes_every_delivered_message(fast_config: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "run"

    code = main(
        ["run", "--config", str(fast_config), "--log-dir", str(log_dir), "--log-deliveries", TASK]
    )

    assert code == ExitCode.OK
    assert _delivered_lines(log_dir) >= 9  # 3 agents: a task, an answer and a vote each at least


def test_a_log_dir_whose_name_is_too_long_exits_2_naming_it(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", "a" * 300, TASK])

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"conclave: --log-dir {'a' * 300}: cannot use it (File name too long); " in err
    assert err.rstrip().endswith("pass a writable directory")
    assert list(tmp_path.iterdir()) == [tmp_path / "fast.yaml"]


def test_a_log_root_that_already_holds_runs_is_taken_as_it_is(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "earlier").mkdir(parents=True)
    (root / "events.jsonl").write_text("")

    assert resolve_log_root(str(root)) == root


def test_a_log_root_not_there_yet_is_checked_but_not_made(tmp_path: Path) -> None:
    root = tmp_path / "runs" / "today"

    assert resolve_log_root(str(root)) == root
    assert not (tmp_path / "runs").exists()
