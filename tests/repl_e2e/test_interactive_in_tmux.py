"""The interactive agent in a real terminal (tmux): it answers one question directly,
launches a multi-agent run for another (the approval dialog: Edit, then Approve), and a
third request plans, then executes the plan (two runs after one approval)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.repl_e2e.tmux import started, terminal


def _config(path: Path) -> Path:
    agents = [
        {"id": f"scripted{i}", "backend": {"type": "scripted", "seed": i, "latency": 0.02}}
        for i in (1, 2, 3)
    ]
    data = {"agents": agents, "orchestrator": {"interactive_mode": {}}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_direct_answer_an_edited_run_and_a_plan_then_its_execution(tmp_path: Path) -> None:
    config = str(_config(tmp_path / "c.yaml"))
    with terminal(tmp_path, "--config", config) as term:
        started(term)
        term.wait_bar("[interactive]")
        term.type("Which agents are configured?")
        term.wait_for("No run needed: 3 agents are configured: scripted1, scripted2, scripted3.")

        term.type("Write a design note on retries")
        term.wait_for("Launch this run?")
        screen = term.wait_for("Agents: scripted1, scripted2, scripted3 (multi, refinement on")
        assert "Task: Write a design note on retries" in screen
        term.keys("2")  # Edit: the field holds the task
        term.wait_for("Task (Enter keeps the edit")
        term.keys("C-u")
        term.type("Write a design note on retries with jitter")
        term.wait_for("task edited: choose Approve to launch it")
        term.keys("1")  # Approve
        term.wait_for("run approved with the edited task: Write a design note on retries with")
        term.wait_for("On “Write a design note on retries with jitter”")

        term.type("Plan and then build a todo CLI")
        term.wait_for("plan, then execute the plan)")
        term.keys("Enter")  # Approve
        screen = term.wait_for("Planned, then executed the plan")
        assert screen.count("ended completed, winner") == 3  # one run, then plan and execution
        term.keys("C-d")
        assert term.wait_until_exited() == 0
    assert len(list(tmp_path.glob(".conclave/runs/*/plans/plan-v1.json"))) == 1
