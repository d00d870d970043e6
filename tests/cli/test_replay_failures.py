"""Whatever file ``conclave replay`` is given, it ends with one line on stderr and exit code 2
when there is no timeline to show: never a traceback, never unbounded memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conclave.runtime.codec import dumps
from conclave.runtime.eventlog import JsonlEventLog
from conclave.runtime.events import LogOpened
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode


def _replay(path: str | Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["replay", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("conclave: ")
    return lines[0]


def test_a_missing_log_exits_2_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _replay(tmp_path / "nope.jsonl", capsys)

    assert code == ExitCode.USAGE
    assert "no event log at" in _one_line(err)


def test_a_directory_without_a_log_exits_2_naming_the_file_looked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _replay(tmp_path, capsys)

    assert code == ExitCode.USAGE
    assert f"no event log at {tmp_path / 'events.jsonl'}" in _one_line(err)


def test_an_empty_file_exits_2_saying_it_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    path.touch()

    code, out, err = _replay(path, capsys)

    assert code == ExitCode.USAGE
    assert out == ""
    assert f"{path} is empty" in _one_line(err)


@pytest.mark.parametrize(
    "content",
    [
        os.urandom(4096),
        b"just some notes\nnot a log\n",
        b'{"name": "a config", "agents": []}\n',
        b"[" * 100_000 + b"\n",
    ],
    ids=["garbage", "text", "json-not-events", "deep-nesting"],
)
def test_a_file_that_is_not_a_log_exits_2_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(content)

    code, out, err = _replay(path, capsys)

    assert code == ExitCode.USAGE
    assert out == ""
    assert f"{path} is not an event log" in _one_line(err)


def test_dev_zero_exits_2_without_reading_it_all(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _replay("/dev/zero", capsys)

    assert code == ExitCode.USAGE
    assert "/dev/zero is not an event log: line 1 is not an event (the line is longer" in _one_line(
        err
    )


def test_a_log_damaged_in_the_middle_exits_2_after_the_events_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    log = JsonlEventLog(path)
    log.record(LogOpened(at=0.0, wall_time=0.0, pid=1))
    log.close()
    with path.open("a", encoding="utf-8") as f:
        f.write("{damaged\n" + dumps(LogOpened(at=1.0, wall_time=0.0, pid=1)) + "\n")

    code, _, err = _replay(path, capsys)

    assert code == ExitCode.USAGE
    assert f"{path}:2: not a valid event" in _one_line(err)


def test_a_file_that_cannot_be_read_exits_2_saying_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _replay("/proc/self/mem", capsys)  # reading offset 0 fails with EIO

    assert code == ExitCode.USAGE
    assert "cannot read /proc/self/mem" in _one_line(err)


def test_a_file_without_read_permission_exits_2_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import conclave.runtime.eventlog

    def denied(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    # The suite may run as root, which reads any file: deny the open itself.
    monkeypatch.setattr(conclave.runtime.eventlog, "open", denied, raising=False)

    code, _, err = _replay(tmp_path / "events.jsonl", capsys)

    assert code == ExitCode.USAGE
    assert "permission denied" in _one_line(err)
