"""An executing plan's live step list in a real terminal: approved, the plan executes and its
steps are shown with their marks as the scripted agents walk them."""

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
