"""``conclave run --mode default|plan|execute``: the run's collaboration mode. A plan-mode run
shows its answer as a rendered plan (text) or adds it as ``plan`` (JSON), and saves it as
``plans/plan-v1.json`` under the log dir; an answer that is not a plan is shown as text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conclave.actors.planning.plan import parse_plan, render_plan
from conclave.actors.run.driver import RunSpec, drive
from conclave.config.modes import CollaborationMode
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, parse_json, write_config

PLAN = {
    "goal": "Ship the feature",
    "steps": [
        {
            "step_number": 1,
            "action": "Read the code",
            "reason": "know what exists",
            "tools_needed": ["read_file"],
            "estimated_time": "10 min",
        },
        {"step_number": 2, "action": "Write the change", "reason": "", "tools_needed": []},
    ],
    "risks": ["breaking the API"],
}
PLAN_ANSWER = f"<proposed_plan>{json.dumps(PLAN)}</proposed_plan>"


def _planner(tmp_path: Path, answer: str = PLAN_ANSWER) -> Path:
    """One scripted agent whose every answer is ``answer``."""
    return write_config(
        tmp_path / "planner.yaml", [{"id": "planner", "latency": 0, "answer_text": answer}]
    )


def _run(config: Path, log_dir: Path, *args: str) -> int:
    return main(["run", "--config", str(config), "--log-dir", str(log_dir), *args, TASK])


def test_an_invalid_mode_names_the_valid_ones_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--mode", "planning", TASK])

    assert code == ExitCode.USAGE
    assert 'invalid mode "planning". Valid modes: default, plan, execute' in capsys.readouterr().err


def test_an_invalid_mode_with_json_output_is_one_error_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--output-format", "json", "--mode", "x", TASK])

    data = parse_json(capsys.readouterr().out)
    assert code == ExitCode.USAGE
    assert 'invalid mode "x". Valid modes: default, plan, execute' in data["error"]


@pytest.fixture
def specs(monkeypatch: pytest.MonkeyPatch) -> list[RunSpec]:
    """The specs ``conclave run`` drives, recorded on their way to the real driver."""
    recorded: list[RunSpec] = []

    async def recording_drive(spec: RunSpec, *args: Any, **kwargs: Any) -> Any:
        recorded.append(spec)
        return await drive(spec, *args, **kwargs)

    monkeypatch.setattr("conclave.ui.headless.command.drive", recording_drive)
    return recorded


@pytest.mark.parametrize("mode", list(CollaborationMode), ids=lambda m: m.value)
def test_the_mode_is_the_runs_collaboration_mode(
    mode: CollaborationMode, tmp_path: Path, specs: list[RunSpec]
) -> None:
    _run(_planner(tmp_path), tmp_path / "run", "--mode", mode.value)

    assert [spec.mode for spec in specs] == [mode]


def test_without_the_flag_the_mode_is_default(tmp_path: Path, specs: list[RunSpec]) -> None:
    _run(_planner(tmp_path), tmp_path / "run")

    assert [spec.mode for spec in specs] == [CollaborationMode.DEFAULT]


def test_plan_mode_prints_the_plan_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run(_planner(tmp_path), tmp_path / "run", "--mode", "plan")

    out = capsys.readouterr().out
    plan = parse_plan(PLAN_ANSWER)
    assert plan is not None
    assert code == ExitCode.OK
    assert out == render_plan(plan) + "\n"


def test_plan_mode_saves_the_plan_as_version_1_under_the_log_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(_planner(tmp_path), tmp_path / "run", "--mode", "plan")

    saved = tmp_path / "run" / "plans" / "plan-v1.json"
    assert parse_plan(saved.read_text(encoding="utf-8")) == parse_plan(PLAN_ANSWER)
    assert f"plan saved to {saved}" in capsys.readouterr().err


def test_plan_mode_json_output_holds_the_parsed_plan_and_where_it_is_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(_planner(tmp_path), tmp_path / "run", "--mode", "plan", "--output-format", "json")

    data = parse_json(capsys.readouterr().out)
    assert data["plan"]["goal"] == "Ship the feature"
    assert [step["action"] for step in data["plan"]["steps"]] == [
        "Read the code",
        "Write the change",
    ]
    assert data["plan_path"] == str(tmp_path / "run" / "plans" / "plan-v1.json")
    assert data["final_answer"] == PLAN_ANSWER


def test_a_plan_mode_answer_that_is_not_a_plan_is_shown_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run(_planner(tmp_path, "just do it"), tmp_path / "run", "--mode", "plan")

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert out == "just do it\n"
    assert "the answer is not a plan; showing it as text" in err
    assert not (tmp_path / "run" / "plans").exists()


def test_a_plan_mode_answer_that_is_not_a_plan_has_a_null_plan_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(
        _planner(tmp_path, "just do it"),
        tmp_path / "run",
        "--mode",
        "plan",
        "--output-format",
        "json",
    )

    data = parse_json(capsys.readouterr().out)
    assert data["plan"] is None
    assert data["plan_path"] is None


def test_outside_plan_mode_a_plan_shaped_answer_is_printed_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(_planner(tmp_path), tmp_path / "run", "--output-format", "json")

    data = parse_json(capsys.readouterr().out)
    assert "plan" not in data
    assert not (tmp_path / "run" / "plans").exists()


def test_plan_mode_stream_json_ends_with_the_plan_in_its_result_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(_planner(tmp_path), tmp_path / "run", "--mode", "plan", "--output-format", "stream-json")

    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert last["type"] == "result"
    assert last["plan"]["goal"] == PLAN["goal"]
    assert last["plan_path"] == str(tmp_path / "run" / "plans" / "plan-v1.json")
