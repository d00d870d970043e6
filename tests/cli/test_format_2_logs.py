"""Logs written in format 2 (before releases written together were one line and an actor's
message to itself went unwritten) are still read: replayed, and a paused run resumed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import conclave.actors.run.driver  # noqa: F401  (registers the messages the log holds)
from conclave.runtime.eventlog import read_event_log
from conclave.runtime.events import Delivered, LogOpened, Released
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.test_replay import timeline_and_table

LOGS = Path(__file__).parent / "logs"
RING_RUN = LOGS / "ring_run_format_2.jsonl"
"""A 3-agent ring run's whole log (kernel events too) as format 2 wrote it: nine releases,
each a ``released`` line and a ``delivered`` line, and the agents' ``round_settled`` to
themselves delivered."""
PAUSED = LOGS / "paused_presentation_format_2"
"""A 3-agent run paused on its presenter's question, as format 2 wrote it."""


def test_a_format_2_log_reads_each_release_and_delivery_as_written() -> None:
    events = read_event_log(RING_RUN).events

    assert isinstance(events[0], LogOpened) and events[0].format == 2
    released = [e for e in events if isinstance(e, Released)]
    assert len(released) == 9
    for release in released:
        after = events[events.index(release) + 1]
        assert isinstance(after, Delivered) and after.envelope == release.envelope
    to_themselves = [
        e for e in events if isinstance(e, Delivered) and e.envelope.sender == e.envelope.recipient
    ]
    assert len(to_themselves) >= 3


def test_replay_shows_a_format_2_runs_releases_and_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["replay", "--verbose", str(RING_RUN)])

    out, err = capsys.readouterr()
    assert (code, err) == (ExitCode.OK, "")
    lines, table = timeline_and_table(out)
    assert sum(" released AnswerUpdate to agent:" in line for line in lines) == 6
    assert re.search(r"run ended: completed, winner \w+$", lines[-1])
    assert len(table) == 4  # a header and 3 agents


def _paused_copy(tmp_path: Path) -> Path:
    """The paused run, copied where the test may write, run from ``tmp_path``."""
    log = tmp_path / "paused"
    shutil.copytree(PAUSED, log)
    paused = json.loads((log / "paused.json").read_text(encoding="utf-8"))
    paused["cwd"] = str(tmp_path)
    (log / "paused.json").write_text(json.dumps(paused), encoding="utf-8")
    return log


def test_a_run_paused_in_format_2_resumes_to_its_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log = _paused_copy(tmp_path)

    code = main(["resume", str(log), "--answer", "keep", "--output-format", "json"])

    out = capsys.readouterr().out
    resumed: dict[str, Any] = json.loads(out)
    assert code == ExitCode.OK
    assert resumed["termination"] == "completed"
    assert resumed["final_answer"]
    opened = read_event_log(log / "resumed-1" / "events.jsonl").events[0]
    assert isinstance(opened, LogOpened) and opened.format == 3
