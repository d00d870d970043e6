"""Which config the REPL opens with, in a real terminal (tmux): the one a run would use
(this directory's ``.conclave/config.yaml``), and ``--config`` without a task opens the REPL."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.repl_e2e.tmux import started, terminal

TASK = "Name three uses of a paperclip"


def _config(path: Path, *ids: str) -> Path:
    """Scripted agents that answer at once, with the ids the tab bar shows."""
    agents = [{"id": agent, "backend": {"type": "scripted", "latency": 0}} for agent in ids]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    return path


def test_the_repl_opens_with_this_directorys_conclave_config(tmp_path: Path) -> None:
    _config(tmp_path / ".conclave" / "config.yaml", "project-alpha", "project-beta")
    with terminal(tmp_path) as term:
        screen = started(term)
        assert "project-alpha" in screen
        assert "project-beta" in screen


def test_conclave_with_a_config_and_no_task_opens_the_repl_with_it(tmp_path: Path) -> None:
    config = _config(tmp_path / "panel.yaml", "given-one", "given-two")
    with terminal(tmp_path, "--config", str(config), "--mode", "plan") as term:
        started(term)
        assert "[plan]" in term.wait_bar("plan mode: on")
        assert "given-two" in term.screen()
        term.keys("C-d")
        assert term.wait_until_exited() == 0
