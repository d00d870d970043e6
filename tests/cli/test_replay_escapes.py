"""A hostile answer (or a crafted log) must not drive the terminal of whoever replays it:
control characters in the lines ``conclave replay`` and live progress print are shown escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.runtime import SupervisorAction
from conclave.runtime.events import ChildExited
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.timeline import describe, neutralise
from tests.cli.helpers import TASK

HOSTILE = "fine answer\x1b]0;owned\x07\x1b[2J\x9b31m\x7f"


def test_neutralise_shows_esc_escaped() -> None:
    assert neutralise("a\x1b[2Jb") == "a\\x1b[2Jb"


def test_neutralise_shows_every_c0_control_but_newline_and_tab_escaped() -> None:
    controls = "".join(chr(c) for c in range(0x20))

    shown = neutralise(controls)

    assert "\n" in shown and "\t" in shown
    assert not any(ch in shown for ch in controls if ch not in "\n\t")
    assert "\\x00" in shown and "\\x0d" in shown


def test_neutralise_shows_c1_controls_and_del_escaped() -> None:
    assert neutralise("\x7f\x80\x9b\x9f") == "\\x7f\\x80\\x9b\\x9f"


def test_neutralise_leaves_other_text_alone() -> None:
    text = "héllo ✓ → 日本語 \u00a0 tab\there\nnext line"

    assert neutralise(text) == text


def test_describe_neutralises_the_line_it_returns() -> None:
    event = ChildExited(
        at=0.0, supervisor="s", child="agent:x", error=HOSTILE, action=SupervisorAction.RESTART
    )

    line = describe(event)

    assert line is not None
    assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x7f" in line


def test_replay_shows_escape_sequences_in_an_answer_escaped(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "run"
    assert main(["run", "--config", str(fast_config), "--log-dir", str(log_dir), TASK]) == 0
    capsys.readouterr()
    hostile = tmp_path / "hostile.jsonl"
    with hostile.open("w", encoding="utf-8") as f:
        for line in (log_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            if data["kind"] == "answer_added":
                data["content"] = HOSTILE
            f.write(json.dumps(data) + "\n")

    code = main(["replay", str(hostile)])

    out, _ = capsys.readouterr()
    assert code == ExitCode.OK
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "answered agent1.1: fine answer\\x1b]0;owned" in out


def test_replay_shows_escape_sequences_in_an_unknown_kind_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"kind": "evil\x1b[2J", "at": 0.0}) + "\n", encoding="utf-8")

    main(["replay", str(path)])

    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "evil\\x1b[2J" in err
