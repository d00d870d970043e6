"""``orchestrator.max_steps_per_round``: configurable, and a round that hits it answers with a
progress report instead of costing the agent its place."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import yaml

from conclave.config.schema import OrchestratorConfig
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode


def _run(tmp_path: Path, steps: int, cap: int | None, *flags: str) -> dict[str, Any]:
    listing = {"tool": "list_directory", "arguments": {"path": "."}}
    backend = {"type": "scripted", "latency": 0, "tool_steps": [listing] * steps}
    orchestrator: dict[str, Any] = {"quiet_period": None, "tools": True}
    if cap is not None:
        orchestrator["max_steps_per_round"] = cap
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump({"agents": [{"id": "a", "backend": backend}], "orchestrator": orchestrator})
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "--config", str(config), "--agent-mode", "single", "--refinement", "off"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--output-format", "json", *flags, "list the files"])
    result: dict[str, Any] = json.loads(out.getvalue())
    result["exit_code"] = code
    return result


def test_the_step_cap_defaults_to_25() -> None:
    assert OrchestratorConfig().max_steps_per_round == 25


def test_a_round_that_hits_the_cap_answers_with_a_progress_report(tmp_path: Path) -> None:
    result = _run(tmp_path, steps=5, cap=3)
    assert result["exit_code"] == ExitCode.OK
    assert result["failed_agents"] == {}
    report = result["final_answer"].splitlines()
    assert report[0] == (
        "Progress report: the round used all 3 of its steps before it finished, after 3 tool calls."
    )
    assert report[1:4] == ["Done so far:", *(['- list_directory {"path":"."}'] * 2)]


def test_a_round_within_the_cap_answers_as_it_always_did(tmp_path: Path) -> None:
    result = _run(tmp_path, steps=5, cap=None)
    assert not result["final_answer"].startswith("Progress report")
