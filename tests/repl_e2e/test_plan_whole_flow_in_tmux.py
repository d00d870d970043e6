"""Issue 26's plan scenario in one real terminal: a plan is made, revised twice, approved with
additions, and executed while its live step list is marked done."""

from __future__ import annotations

import re
from pathlib import Path

from tests.repl_e2e.tmux import started, terminal

VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"
PLAN_CARD = "Approve with additional instructions"


def test_a_plan_revised_twice_then_approved_with_additions_executes_its_steps(
    tmp_path: Path,
) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.keys("BTab")
        term.wait_bar("[plan]")
        term.type("Plan a garden party")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait_for("plans/plan-v1.json")
        for version, feedback in ((2, "fewer guests"), (3, "start at noon")):
            term.wait_for(PLAN_CARD)
            term.keys("3")
            term.wait_for("Feedback (Enter to revise")
            term.type(feedback)
            term.wait_for(f"Revise the plan: {feedback}")
            term.wait_for(VOTE_PROMPT)
            term.keys("Enter")
            term.wait_for(f"plans/plan-v{version}.json")
        term.wait_for(PLAN_CARD)
        term.keys("2")
        term.wait_for("Additional instructions")
        term.type("bring umbrellas")
        term.wait_for("Executing plan")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        screen = term.wait(
            lambda screen: re.search(r"Plan: (\d+)/\1 done", screen) is not None,
            "every step of the plan done",
        )
        assert "[x] 1. " in screen
        assert "Execute the approved plan, and: bring umbrellas" in term.wait(
            lambda screen: screen.count("completed: winner") >= 1, "the execution's answer"
        )
    saved = sorted(p.name for p in tmp_path.glob(".conclave/runs/*/plans/plan-v*.json"))
    assert saved[-1] == "plan-v3.json"
