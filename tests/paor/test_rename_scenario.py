"""The mission's scenario, end to end with the scripted backend's PAOR policy: "find all
usages of function X and rename it to Y" on a fixture repository. The agent plans, searches,
edits, runs the fixture's tests, reflects and completes; the files are right afterwards."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import yaml

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.paor.helpers import TASK


def _config(tmp_path: Path, repo: Path, **paor: Any) -> Path:
    steps = [
        {"tool": "search", "arguments": {"pattern": r"old_total", "path": str(repo)}},
        {
            "tool": "edit_file",
            "arguments": {
                "path": f"{repo}/util.py",
                "old": "def old_total",
                "new": "def compute_total",
            },
        },
        {
            "tool": "edit_file",
            "arguments": {
                "path": f"{repo}/app.py",
                "old": "old_total",
                "new": "compute_total",
                "replace_all": True,
            },
        },
        {
            "tool": "run_shell",
            "arguments": {"command": f"cd {repo} && python3 test_app.py"},
        },
    ]
    agent: dict[str, Any] = {
        "id": "paor",
        "loop": "paor",
        "backend": {"type": "scripted", "latency": 0, "tool_steps": steps},
    }
    if paor:
        agent["paor"] = paor
    path = tmp_path / "paor.yaml"
    path.write_text(yaml.safe_dump({"agents": [agent], "orchestrator": {"quiet_period": None}}))
    return path


def _run(tmp_path: Path, config: Path, repo: Path, *flags: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    log = tmp_path / f"log{len(list(tmp_path.glob('log*')))}"
    argv = ["run", "--config", str(config), "--log-dir", str(log), "--agent-mode"]
    argv += ["single", "--refinement", "off", "--context", f"{repo}:w", *flags, TASK]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_rename_is_searched_edited_tested_reflected_and_completed(
    tmp_path: Path, repo: Path
) -> None:
    code, out, err = _run(tmp_path, _config(tmp_path, repo), repo, "--output-format", "json")
    assert code == ExitCode.OK, err
    result = json.loads(out)
    assert result["final_answer"].startswith("Done: made 4 of 4 steps")
    assert "old_total" not in (repo / "util.py").read_text() + (repo / "app.py").read_text()
    assert "def compute_total" in (repo / "util.py").read_text()
    assert "compute_total(xs)" in (repo / "app.py").read_text()


def test_every_phase_is_a_stream_json_line_with_its_iteration(tmp_path: Path, repo: Path) -> None:
    code, out, err = _run(tmp_path, _config(tmp_path, repo), repo, "--output-format", "stream-json")
    assert code == ExitCode.OK, err
    lines = [json.loads(line) for line in out.splitlines()]
    moves = [
        (e["source"], e["target"], e["iteration"])
        for e in lines
        if e["type"] == "paor_state_changed"
    ]
    assert moves == [
        ("idle", "planning", 1),
        ("planning", "acting", 1),
        ("acting", "observing", 1),
        ("observing", "reflecting", 1),
        ("reflecting", "complete", 1),
    ]
    shell = [e for e in lines if e["type"] == "tool_call_finished" and e["tool"] == "run_shell"]
    assert [e["ok"] for e in shell] == [True]


def _failing_tests_config(tmp_path: Path, repo: Path, max_iterations: int) -> Path:
    """The scenario's config, with the fixture's tests made to fail after the edits."""
    (repo / "test_app.py").write_text("raise SystemExit('tests failed: 1 of 2')\n")
    return _config(tmp_path, repo, max_iterations=max_iterations)


def test_max_iterations_exits_5_with_a_progress_report(tmp_path: Path, repo: Path) -> None:
    config = _failing_tests_config(tmp_path, repo, max_iterations=2)
    code, out, err = _run(tmp_path, config, repo, "--output-format", "json")
    assert code == 5, err
    result = json.loads(out)
    assert result["termination"] == "max_iterations"
    report = result["final_answer"].splitlines()
    assert report[0] == "Stopped after 2 iterations (the limit): made 4 of 4 steps " + (
        "(search, edit_file, edit_file, run_shell); 1 failed"
    )
    assert report[1] == "Left to do: fix what failed"


def test_a_run_whose_paor_goal_is_achieved_ends_completed(tmp_path: Path, repo: Path) -> None:
    code, out, _ = _run(tmp_path, _config(tmp_path, repo), repo, "--output-format", "json")
    assert (code, json.loads(out)["termination"]) == (ExitCode.OK, "completed")


def test_the_loop_flag_runs_a_free_agent_as_paor(tmp_path: Path, repo: Path) -> None:
    config = _config(tmp_path, repo)
    data = yaml.safe_load(config.read_text())
    data["agents"][0]["loop"] = "free"
    config.write_text(yaml.safe_dump(data))
    code, out, err = _run(tmp_path, config, repo, "--loop", "paor", "--output-format", "json")
    assert code == ExitCode.OK, err
    assert json.loads(out)["final_answer"].startswith("Done: made 4 of 4 steps")
    code, out, _ = _run(tmp_path, config, repo, "--output-format", "json")
    assert not json.loads(out)["final_answer"].startswith("Done:")


def test_progress_is_concise_by_default_and_verbose_adds_every_step(
    tmp_path: Path, repo: Path
) -> None:
    config = _config(tmp_path, repo)
    code, out, err = _run(tmp_path, config, repo)
    assert code == ExitCode.OK, err
    assert out.startswith("Done: made 4 of 4 steps")
    assert "paor paor goal_achieved after 1 iteration: Done: made 4 of 4 steps" in err
    assert "Iteration 1" not in err + out
    _, _, verbose = _run(tmp_path, config, repo, "--verbose")
    for detail in (
        "| Iteration 1",
        "| Goal: carry out the task",
        "| 4. run_shell {",
        "| Reflection:",
    ):
        assert detail in verbose


def test_in_coordination_paor_rounds_answer_and_vote_rounds_never_run_paor(
    tmp_path: Path,
) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "--agents", "2", "--loop", "paor", "--output-format", "stream-json", TASK]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == ExitCode.OK, err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    finished = [e for e in lines if e["type"] == "paor_finished"]
    answers = [e for e in lines if e["type"] == "answer_added"]
    votes = [e for e in lines if e["type"] == "vote_added"]
    assert votes and len(finished) == len(answers) == 2
    assert sorted(a["content"] for a in answers) == sorted(f["summary"] for f in finished)
    plans = [e for e in lines if e["type"] == "paor_state_changed" and e["target"] == "planning"]
    assert len(plans) == 2  # one iteration per answer round; none in the vote rounds
