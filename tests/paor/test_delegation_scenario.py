"""The rename scenario with an Explore sub-agent, end to end on the scripted backend (no key):
the agent delegates "understand this codebase" to an explore sub-agent (read-only tools, its
own loop, under the agent's own supervisor), waits for its summary, then renames, tests,
reflects and completes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from conclave.ui.exit_codes import ExitCode
from tests.paor.test_rename_scenario import _config, _run


def _delegating(tmp_path: Path, repo: Path, **paor: Any) -> Path:
    path = _config(tmp_path, repo, **paor)
    config = yaml.safe_load(path.read_text())
    config["agents"][0]["backend"]["subtasks"] = [
        {
            "id": "look",
            "delegate": "explore",
            "task": "understand this codebase",
            "tool_steps": [
                {"tool": "read_file", "arguments": {"path": f"{repo}/util.py"}},
                {"tool": "search", "arguments": {"pattern": "old_total", "path": str(repo)}},
            ],
        }
    ]
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_explore_sub_agent_summarises_the_code_and_the_agent_then_renames(
    tmp_path: Path, repo: Path
) -> None:
    config = _delegating(tmp_path, repo)
    code, out, err = _run(tmp_path, config, repo, "--output-format", "json")

    assert code == ExitCode.OK, err
    answer = json.loads(out)["final_answer"]
    assert answer.startswith("Done: made 4 of 4 own steps; sub-agents: explore step look: ")
    assert "Explored with 2 calls. read_file: " in answer and "def old_total(xs)" in answer
    assert "Sub-agents: 1 (1 done)" in answer
    assert "def compute_total" in (repo / "util.py").read_text()
    assert "compute_total(xs)" in (repo / "app.py").read_text()


def test_the_sub_agent_runs_under_the_agents_own_supervisor_in_the_event_log(
    tmp_path: Path, repo: Path
) -> None:
    code, _out, err = _run(tmp_path, _delegating(tmp_path, repo), repo)
    assert code == ExitCode.OK, err

    [log] = (tmp_path / "log0").rglob("events.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    started = [e for e in events if e["kind"] == "child_started" and "subagent:" in e["child"]]
    assert [(e["supervisor"], e["child"]) for e in started] == [
        ("agent:paor#1/children", "subagent:paor/1.look")
    ]
    assert kinds.index("sub_agent_started") < kinds.index("sub_agent_finished")
    [finished] = [e for e in events if e["kind"] == "sub_agent_finished"]
    assert finished["end"] == "goal_achieved" and finished["tokens"] > 0


def test_with_max_depth_0_the_agent_does_the_work_itself(tmp_path: Path, repo: Path) -> None:
    code, out, err = _run(
        tmp_path, _delegating(tmp_path, repo, max_depth=0), repo, "--output-format", "json"
    )

    assert code == ExitCode.OK, err
    answer = json.loads(out)["final_answer"]
    assert answer.startswith("Done: made 4 of 4 steps") and "Sub-agents" not in answer


def test_an_agent_out_of_tokens_ends_the_run_with_its_progress_exit_5(
    tmp_path: Path, repo: Path
) -> None:
    config = _delegating(tmp_path, repo, max_tokens=1)
    code, out, err = _run(tmp_path, config, repo, "--output-format", "json")

    assert code == ExitCode.MAX_ITERATIONS, err
    result = json.loads(out)
    assert result["termination"] == "max_iterations"
    assert result["final_answer"].startswith("Stopped: its budget ran out")
    assert "the round used" in result["final_answer"]
