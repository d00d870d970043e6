"""Plan mode in a real terminal: plan, approve with an addition, and the plan executes."""

from __future__ import annotations

from pathlib import Path

from tests.repl_e2e.tmux import started, terminal

VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"


def test_a_plan_is_approved_with_an_addition_and_executed(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.keys("BTab")
        term.wait_bar("[plan]")
        term.type("Plan a garden party")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait_for("Approve with additional instructions")
        screen = term.wait_for("plan saved to")
        assert "plans/plan-v1.json" in screen
        term.keys("2")
        term.wait_for("Additional instructions")
        term.type("bring umbrellas")
        term.wait_for("Executing plan")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        screen = term.wait(
            lambda screen: screen.count("completed: winner") == 2, "the execution's answer"
        )
        assert "Execute the approved plan, and: bring umbrellas" in screen
        assert "[plan]" not in term.wait_bar("plan mode: off")
    assert list(tmp_path.glob(".conclave/runs/*/plans/plan-v1.json"))
