"""Tool calls as people see them: text mode (stderr), ``--verbose``, ``conclave replay`` and
stream-json show each call as it starts and ends, refused calls with why; the event log
keeps each call's whole output, so replay ``--verbose`` shows it in full."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conclave.actors.events.loop import PREVIEW_BYTES, ToolCallFinished
from conclave.runtime import read_event_log
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, write_config

LONG_COMMAND = "seq 1 5000"
LONG_OUTPUT = "".join(f"{n}\n" for n in range(1, 5001))


def _config(tmp_path: Path) -> Path:
    """Agent a1 runs a shell command of 8 lines, one of 5,000, a write outside its grants
    (refused), and a command that fails; a2 just answers."""
    steps = [
        {"tool": "run_shell", "arguments": {"command": "seq 1 8"}},
        {"tool": "run_shell", "arguments": {"command": LONG_COMMAND}},
        {"tool": "write_file", "arguments": {"path": "/etc/forbidden.txt", "content": "x"}},
        {"tool": "run_shell", "arguments": {"command": "echo oops; exit 3"}},
    ]
    agents = [
        {"id": "a1", "seed": 1, "latency": 0, "tool_steps": steps},
        {"id": "a2", "seed": 2, "latency": 0},
    ]
    return write_config(tmp_path / "tools.yaml", agents, tools=True)


def _run(tmp_path: Path, *flags: str) -> tuple[str, str, Path]:
    """``conclave run`` in-process: (stdout, stderr, log dir)."""
    out, err = io.StringIO(), io.StringIO()
    log = tmp_path / "log"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["run", "--config", str(_config(tmp_path)), "--log-dir", str(log), *flags, TASK]
        )
    assert code == ExitCode.OK, err.getvalue()
    return out.getvalue(), err.getvalue(), log


def _timeline(text: str) -> list[str]:
    """The timeline lines, without their times."""
    return [re.sub(r"^\[ *[\d.]+s\] ", "", line) for line in text.splitlines()]


def test_text_mode_shows_each_call_as_it_starts_and_ends_with_its_lines(tmp_path: Path) -> None:
    _, err, _ = _run(tmp_path)

    lines = _timeline(err)
    start = lines.index('a1 [tool:run_shell] running… {"command":"seq 1 8"}')
    done = next(line for line in lines[start:] if line.startswith("a1 [tool:run_shell] done"))
    assert re.fullmatch(r"a1 \[tool:run_shell\] done \(8 lines, \d+\.\d\ds\)", done)


def test_text_mode_shows_a_refused_call_and_why(tmp_path: Path) -> None:
    _, err, _ = _run(tmp_path)

    [refused] = [line for line in _timeline(err) if "] refused: " in line]
    assert refused.startswith(
        "a1 [tool:write_file] refused: the path '/etc/forbidden.txt' is outside the paths "
        "you may write"
    )


def test_text_mode_shows_a_failed_call_and_its_error_on_one_line(tmp_path: Path) -> None:
    _, err, _ = _run(tmp_path)

    assert any(
        re.fullmatch(
            r"a1 \[tool:run_shell\] failed \(\d+\.\d\ds\): the command exited with code 3: oops",
            line,
        )
        for line in _timeline(err)
    )


def test_the_event_log_keeps_the_whole_output_of_a_call(tmp_path: Path) -> None:
    _, _, log = _run(tmp_path)

    finished = [
        e for e in read_event_log(log / "events.jsonl").events if isinstance(e, ToolCallFinished)
    ]
    [long] = [e for e in finished if LONG_COMMAND in e.arguments]
    assert len(LONG_OUTPUT.encode()) > 10 * PREVIEW_BYTES
    assert long.output == LONG_OUTPUT
    [refused] = [e for e in finished if e.tool == "write_file"]
    assert refused.refused and "outside the paths you may write" in (refused.error or "")


def test_replay_verbose_shows_a_calls_whole_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, log = _run(tmp_path)

    assert main(["replay", "--verbose", str(log)]) == ExitCode.OK

    out = capsys.readouterr().out
    lines = _timeline(out)
    done = lines.index(next(line for line in lines if "done (5000 lines" in line))
    assert lines[done + 1 : done + 5001] == [f"    | {n}" for n in range(1, 5001)]


def test_replay_without_verbose_shows_the_calls_but_not_their_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, log = _run(tmp_path)

    assert main(["replay", str(log)]) == ExitCode.OK

    lines = _timeline(capsys.readouterr().out)
    assert sum("[tool:" in line and "running…" in line for line in lines) == 4
    assert any("a1 [tool:write_file] refused: " in line for line in lines)
    assert not any(line.startswith("    | ") for line in lines)


def test_stream_json_carries_each_calls_whole_output_and_whether_it_was_refused(
    tmp_path: Path,
) -> None:
    out, _, _ = _run(tmp_path, "--output-format", "stream-json")

    records: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]
    finished = [r for r in records if r["type"] == "tool_call_finished"]
    assert [(r["tool"], r["ok"], r["refused"]) for r in finished] == [
        ("run_shell", True, False),
        ("run_shell", True, False),
        ("write_file", False, True),
        ("run_shell", False, False),
    ]
    assert finished[1]["output"] == LONG_OUTPUT
    started = [r for r in records if r["type"] == "tool_call_started"]
    assert [r["call_id"] for r in started] == [r["call_id"] for r in finished]
