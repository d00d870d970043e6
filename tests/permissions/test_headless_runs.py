"""Permission modes in whole headless runs: with nobody to ask, a call that must ask is a
refused tool call the agent reads and goes on from, never a failure that excludes it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from conclave.actors.events.loop import ToolCallFinished
from conclave.runtime import read_event_log
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, write_config


def _config(tmp_path: Path, permissions: str = "") -> Path:
    """One agent writes notes.txt, then deletes it, then answers; ``permissions`` is the
    section's YAML."""
    steps = [
        {"tool": "write_file", "arguments": {"path": "notes.txt", "content": "draft"}},
        {"tool": "delete_file", "arguments": {"path": "notes.txt"}},
    ]
    agents = [{"id": "a1", "seed": 1, "latency": 0, "tool_steps": steps}]
    path = write_config(tmp_path / "c.yaml", agents, tools=True)
    path.write_text(path.read_text(encoding="utf-8") + permissions, encoding="utf-8")
    return path


def _run(tmp_path: Path, *flags: str, permissions: str = "") -> str:
    """Run headless; its stderr."""
    log = tmp_path / "log"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(
            [
                "run",
                "--config",
                str(_config(tmp_path, permissions)),
                "--log-dir",
                str(log),
                *flags,
                TASK,
            ]
        )
    assert code == ExitCode.OK, err.getvalue()
    return err.getvalue()


def _finished(tmp_path: Path, *flags: str, permissions: str = "") -> dict[str, ToolCallFinished]:
    """Run headless; each tool's ``ToolCallFinished`` by tool name."""
    _run(tmp_path, *flags, permissions=permissions)
    events = read_event_log(tmp_path / "log" / "events.jsonl").events
    return {e.tool: e for e in events if isinstance(e, ToolCallFinished)}


def test_accept_edits_headless_lets_the_write_run_and_refuses_the_delete(tmp_path: Path) -> None:
    finished = _finished(tmp_path, "--permission-mode", "accept-edits")

    assert finished["write_file"].ok
    delete = finished["delete_file"]
    assert delete.refused
    assert delete.error is not None
    assert "nobody can approve it: the run is headless" in delete.error


def test_bypass_is_the_headless_default_and_nothing_asks(tmp_path: Path) -> None:
    finished = _finished(tmp_path)

    assert finished["write_file"].ok and finished["delete_file"].ok


def test_a_deny_rule_names_itself_to_the_model(tmp_path: Path) -> None:
    finished = _finished(tmp_path, permissions="permissions:\n  deny: ['delete_file(*.txt)']\n")

    assert finished["delete_file"].error == (
        "the call to delete_file was refused: the permissions.deny rule 'delete_file(*.txt)' "
        "forbids it"
    )


def test_the_headless_refusal_is_in_the_log_as_a_denied_approval(tmp_path: Path) -> None:
    _finished(tmp_path, "--permission-mode", "accept-edits")

    lines = (tmp_path / "log" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    asked = [e for e in events if e["kind"].startswith("tool_approval_")]
    assert [(e["kind"], e["tool"]) for e in asked] == [
        ("tool_approval_requested", "delete_file"),
        ("tool_approval_decided", "delete_file"),
    ]
    assert asked[1]["outcome"] == "denied"


def test_a_headless_run_whose_mode_asks_says_at_start_that_nobody_will_approve(
    tmp_path: Path,
) -> None:
    err = _run(tmp_path, "--permission-mode", "ask")
    assert "conclave: permission mode ask: nobody can approve a call in a headless run" in err


def test_a_bypass_run_says_nothing_of_permissions(tmp_path: Path) -> None:
    assert "permission mode" not in _run(tmp_path)
