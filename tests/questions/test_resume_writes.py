"""A resumed run's ``writes`` cover the whole run: the paused run keeps the baseline of its
writable context paths in its log directory, and the run that resumes it measures from it,
so what was written before the pause is listed (and diffed) with what was written after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, write_config
from tests.questions.helpers import CRITICAL


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _write(path: Path, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "arguments": {"path": str(path), "content": content}}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _paused_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], project: Path, log: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A single agent writing ``project`` (a context path it may write while it works) that
    writes ``a.txt`` and changes ``old.txt``, asks, then writes ``b.txt``: the paused run's
    result and the resumed run's. The paused run logs into ``log`` (``tmp_path/paused``)."""
    steps = [
        _write(project / "a.txt", "A"),
        _write(project / "old.txt", "changed"),
        {"tool": "ask_user", "arguments": CRITICAL},
        _write(project / "b.txt", "B"),
    ]
    cfg = write_config(
        tmp_path / "w.yaml", [{"id": "a1", "latency": 0, "tool_steps": steps}], tools=True
    )
    log = log or tmp_path / "paused"
    code, paused = _run(
        capsys,
        *("run", "--config", str(cfg), "--log-dir", str(log), "--on-question", "pause"),
        *("--context", f"{project}:w", "--agent-mode", "single", "--refinement", "off", TASK),
    )
    assert code == ExitCode.PAUSED
    code, resumed = _run(capsys, "resume", str(log), "--answer", "delete")
    assert code == ExitCode.OK
    return paused, resumed


def _listed(result: dict[str, Any]) -> dict[str, str]:
    return {Path(w["path"]).name: w["kind"] for w in result["writes"]["files"]}


def test_a_resumed_runs_writes_list_what_was_written_before_the_pause_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "old.txt").write_text("old")

    paused, resumed = _paused_and_resumed(tmp_path, capsys, project)

    assert _listed(paused) == {"a.txt": "new", "old.txt": "modified"}
    assert _listed(resumed) == {"a.txt": "new", "old.txt": "modified", "b.txt": "new"}


def test_a_resumed_runs_diff_shows_a_file_as_it_was_before_the_pause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "old.txt").write_text("old")

    _paused_and_resumed(tmp_path, capsys, project)

    diff = (tmp_path / "paused" / "resumed-1" / "context_path_writes.diff").read_text()
    assert "-old" in diff
    assert "+changed" in diff
    assert "+B" in diff


def test_a_resumed_run_counts_no_file_of_the_paused_runs_directory_as_a_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "old.txt").write_text("old")

    _, resumed = _paused_and_resumed(tmp_path, capsys, project, log=project / "paused")

    assert _listed(resumed) == {"a.txt": "new", "old.txt": "modified", "b.txt": "new"}
