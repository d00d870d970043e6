"""Plan mode performs no write whatever a model calls: a whole ``conclave run --mode plan``
whose scripted agent insists on one write route — each built-in write tool, a shell
redirect, each write tool of a real MCP filesystem server — on a writable context path the
server serves, with ``--permission-mode bypass`` (nothing asks). The route is refused and
nothing changes; a call to a write tool plan mode did not offer is a refused call the model
reads ("plan mode is read-only"), never a failed try."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.ui.cli import main
from tests.cli.helpers import TASK
from tests.mcp.conftest import fs_server  # noqa: F401  (the fixture)

ROUTES: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "{files}/new.txt", "content": "x"}),
    ("edit_file", {"path": "{files}/notes.txt", "old": "alpha", "new": "beta"}),
    ("delete_file", {"path": "{files}/notes.txt"}),
    ("run_shell", {"command": "echo x > {files}/new.txt"}),
    ("run_shell", {"command": "echo x >> {files}/notes.txt"}),
    ("mcp__fs__write_file", {"path": "{files}/new.txt", "content": "x"}),
    (
        "mcp__fs__edit_file",
        {"path": "{files}/notes.txt", "edits": [{"oldText": "alpha", "newText": "b"}]},
    ),
    ("mcp__fs__create_directory", {"path": "{files}/made"}),
    ("mcp__fs__move_file", {"source": "{files}/notes.txt", "destination": "{files}/new.txt"}),
]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("alpha notes\n")
    return root.resolve()


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(root.rglob("*"))
    }


def _filled(value: Any, files: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{files}", str(files))
    if isinstance(value, list):
        return [_filled(v, files) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, files) for k, v in value.items()}
    return value


def _plan_run(tmp_path: Path, files: Path, server: str, step: dict[str, Any], **fs: Any) -> None:
    """Run in plan mode, logging into ``tmp_path/log``."""
    backend = {
        "type": "scripted",
        "latency": 0,
        "tool_steps": [step],
        "call_unoffered_tools": True,
    }
    config = {
        "agents": [{"id": "a1", "backend": backend}],
        "orchestrator": {
            "quiet_period": None,
            "context_paths": [{"path": str(files), "permission": "write"}],
        },
        "mcp_servers": [
            {"name": "fs", "type": "stdio", "command": server, "args": [str(files)], **fs}
        ],
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(
            [
                *("run", "--config", str(path), "--log-dir", str(tmp_path / "log")),
                *("--mode", "plan", "--permission-mode", "bypass", TASK),
            ]
        )


@pytest.mark.parametrize(
    ("tool", "arguments"), ROUTES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(ROUTES)]
)
def test_a_write_route_called_in_plan_mode_is_refused_and_changes_nothing(
    tmp_path: Path,
    files: Path,
    fs_server: str,  # noqa: F811
    tool: str,
    arguments: dict[str, Any],
) -> None:
    before = _snapshot(files)
    step = {"tool": tool, "arguments": _filled(arguments, files)}

    _plan_run(tmp_path, files, fs_server, step)

    assert _snapshot(files) == before
    events = _events(tmp_path)
    [finished] = [e for e in events if e["kind"] == "tool_call_finished" and e["tool"] == tool]
    assert finished["refused"]
    assert f"plan mode is read-only: {tool} changes files" in finished["error"]


@pytest.mark.parametrize(("tool", "arguments"), ROUTES[:4], ids=[t for t, _ in ROUTES[:4]])
def test_a_write_tool_plan_mode_did_not_offer_spends_no_try(
    tmp_path: Path,
    files: Path,
    fs_server: str,  # noqa: F811
    tool: str,
    arguments: dict[str, Any],
) -> None:
    step = {"tool": tool, "arguments": _filled(arguments, files)}

    _plan_run(tmp_path, files, fs_server, step)

    events = _events(tmp_path)
    assert [e for e in events if e["kind"] == "llm_try_failed"] == []
    assert events[-1]["kind"] == "run_ended"
    assert events[-1]["termination"] == "completed"


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "log" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_an_mcp_write_tool_the_config_calls_read_only_still_cannot_write_while_planning(
    tmp_path: Path,
    files: Path,
    fs_server: str,  # noqa: F811
) -> None:
    """The config's ``read_only`` list is wrong about write_file, so plan mode offers it:
    the confined server sees the context path read-only while planning, and the write fails."""
    before = _snapshot(files)
    step = {
        "tool": "mcp__fs__write_file",
        "arguments": {"path": f"{files}/new.txt", "content": "x"},
    }

    _plan_run(tmp_path, files, fs_server, step, read_only=["write_file"])

    assert _snapshot(files) == before
    lines = (tmp_path / "log" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    [finished] = [e for e in map(json.loads, lines) if e["kind"] == "tool_call_finished"]
    assert not finished["ok"]
