"""A plan's steps declare the files they change; while the approved plan executes under
``accept-edits``, a write to a declared file proceeds and a write to any other asks."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from conclave.actors.planning.flow import execution_task
from conclave.actors.planning.plan import Plan, PlanStep, parse_plan, plan_json
from conclave.actors.run.services import declared_files
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import write_config

PLAN = Plan(
    goal="Write the docs",
    steps=(
        PlanStep(step_number=1, action="Write the guide", files=("docs/guide.md",)),
        PlanStep(step_number=2, action="Check it", files=()),
    ),
)


def test_a_step_declares_its_files_and_they_read_back() -> None:
    plan = parse_plan(plan_json(PLAN))
    assert plan is not None
    assert plan.steps[0].files == ("docs/guide.md",)
    assert plan.declared_files() == ("docs/guide.md",)


def test_a_plan_whose_steps_declare_no_files_declares_none() -> None:
    plan = Plan(goal="g", steps=(PlanStep(step_number=1, action="a"),))
    assert plan.declared_files() is None


def test_a_step_whose_files_are_not_texts_is_not_a_plan() -> None:
    text = json.dumps({"goal": "g", "steps": [{"action": "a", "files": [{"x": 1}]}]})
    assert parse_plan(text) is None


def test_the_execution_task_carries_the_declared_files_to_the_run() -> None:
    assert declared_files(execution_task(PLAN, "")) == ("docs/guide.md",)
    assert declared_files("Write the docs") is None


def test_executing_under_accept_edits_a_write_outside_the_plan_asks(tmp_path: Path) -> None:
    steps = [
        {"tool": "write_file", "arguments": {"path": "docs/guide.md", "content": "# Guide\n"}},
        {"tool": "write_file", "arguments": {"path": "setup.py", "content": "x"}},
    ]
    config = write_config(
        tmp_path / "c.yaml", [{"id": "a1", "latency": 0, "tool_steps": steps}], tools=True
    )
    log = tmp_path / "log"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(
            [
                *("run", "--config", str(config), "--log-dir", str(log)),
                *("--permission-mode", "accept-edits", execution_task(PLAN, "")),
            ]
        )

    assert code == ExitCode.OK, err.getvalue()
    lines = (log / "events.jsonl").read_text(encoding="utf-8").splitlines()
    finished = [e for e in map(json.loads, lines) if e["kind"] == "tool_call_finished"]
    writes = [e for e in finished if e["tool"] == "write_file"]
    assert [(json.loads(e["arguments"])["path"], e["ok"]) for e in writes] == [
        ("docs/guide.md", True),
        ("setup.py", False),
    ]
    assert "nobody can approve it" in writes[1]["error"]
