"""Plan mode's flow in a real terminal: approved, a plan executes with its live step list
marked as the scripted agents walk it; Shift+Tab while agents work asks, then stops them."""

from __future__ import annotations

import re
from pathlib import Path

from tests.repl_e2e.tmux import started, terminal

VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"


def test_the_step_list_shows_the_plans_steps_done_as_it_executes(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.keys("BTab")
        term.wait_bar("[plan]")
        term.type("Plan a garden party")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait_for("Approve with additional instructions")
        term.keys("1")
        term.wait_for("Executing plan")
        screen = term.wait(
            lambda screen: re.search(r"Plan: (\d+)/\1 done", screen) is not None,
            "every step of the plan done",
        )
        assert "[x] 1. " in screen


def test_shift_tab_while_agents_work_stops_them_once_confirmed(tmp_path: Path) -> None:
    config = tmp_path / "slow.yaml"
    agent = {"type": "scripted", "latency": 30}
    config.write_text(
        "agents:\n" + "".join(f"  - {{id: slow{i}, backend: {agent}}}\n" for i in (1, 2)),
        encoding="utf-8",
    )
    with terminal(tmp_path, "--config", str(config)) as term:
        started(term)
        term.type("Plan a garden party")
        term.wait_for("Running ·")
        term.keys("BTab")
        term.wait_for("Switch to plan mode? Work in progress will stop.")
        term.keys("1")
        term.wait_for("cancelled")
        assert "[plan]" in term.wait_bar("plan mode: on")
