"""A question in a real terminal: a critical question opens its red card, the person picks an
option, and the agent continues to its answer."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import write_config
from tests.questions.helpers import CRITICAL
from tests.repl_e2e.tmux import started, terminal

TITLE = "CRITICAL question from solo"
RED_BACKGROUND = "41m"
"""SGR 41 (or ...;41m): the background red that marks a critical card."""


def test_a_critical_question_is_answered_through_its_card(tmp_path: Path) -> None:
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    config = write_config(
        tmp_path / "ask.yaml", [{"id": "solo", "latency": 0, "tool_steps": [ask]}]
    )
    with terminal(tmp_path, "--config", str(config)) as term:
        started(term)
        term.type("Tidy the repository")
        screen = term.wait_for(TITLE)
        assert "> 1. Keep them (default) — safe" in screen
        assert "3. Other…" in screen
        colored = term._run("capture-pane", "-e", "-p", "-t", "repl", "-S", "-200")
        title_line = next(line for line in colored.splitlines() if TITLE in line)
        assert RED_BACKGROUND in title_line
        term.keys("Down", "Enter")  # Delete them
        term.wait_for("Press Ctrl+O to override, Enter to continue")
        term.keys("Enter")
        screen = term.wait_for("completed: winner")
        assert "you answered solo: delete" in screen
        assert TITLE not in screen.split("you answered solo: delete", 1)[1]
