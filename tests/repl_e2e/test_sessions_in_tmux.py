"""Sessions in a real terminal (tmux): two turns, quit, ``conclave -c`` shows both and the
restored modes; a ``kill -9`` mid-turn, then ``-c`` resumes with every complete entry."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import yaml

from conclave.actors.session.entries import RunRecorded, UserTurn
from conclave.actors.session.store import read_session
from tests.repl_e2e.tmux import started, terminal

VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"


def _config(path: Path, latency: float) -> Path:
    agents = [
        {"id": f"scripted{i}", "backend": {"type": "scripted", "seed": i, "latency": latency}}
        for i in (1, 2)
    ]
    path.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    return path


def _session_files(cwd: Path) -> list[Path]:
    return sorted(cwd.glob(".conclave/sessions/*/session.jsonl"))


def test_two_turns_quit_and_continue_shows_both_and_the_restored_mode(tmp_path: Path) -> None:
    config = str(_config(tmp_path / "c.yaml", 0.05))
    with terminal(tmp_path, "--config", config) as term:
        started(term)
        term.type("First question about nurseries")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait_for("completed: winner")
        term.keys("M-r")  # refinement off: a mode change the session records
        term.wait_bar("refinement: off")
        term.type("Second question about cancel scopes")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait(lambda s: s.count("completed: winner") >= 2, "the second answer")
        term.keys("C-d")
        screen = term.wait_for("[conclave exited with 0]")
        assert "session 2" in screen and "conclave --resume" in screen
    [path] = _session_files(tmp_path)
    with terminal(tmp_path, "--config", config, "-c") as term:
        screen = term.wait_for("resumed session")
        started(term)
        screen = term.wait_bar("refinement: off")
        screen = term.screen()
        assert "First question about nurseries" in screen
        assert "Second question about cancel scopes" in screen
        assert f"resumed session {path.parent.name}: 2 turns" in screen
        assert "restored default mode, multi-agent, refinement off" in screen
        term.keys("C-d")
        term.wait_for("[conclave exited with 0]")


def test_a_kill_mid_turn_then_continue_resumes_with_every_complete_entry(
    tmp_path: Path,
) -> None:
    config = str(_config(tmp_path / "c.yaml", 0.05))
    slow = str(_config(tmp_path / "slow.yaml", 60))
    with terminal(tmp_path, "--config", config) as term:
        started(term)
        term.type("A question that is answered")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait_for("completed: winner")
        term.keys("C-d")
        term.wait_for("[conclave exited with 0]")
    with terminal(tmp_path, "--config", slow, "-c") as term:
        started(term)
        term.wait_for("resumed session")
        term.type("A question cut off by kill -9")
        term.wait_for("Running")
        os.kill(term.pid(), signal.SIGKILL)
        term.wait_for("[conclave exited with 137]")
    [path] = _session_files(tmp_path)
    entries = read_session(path).entries
    assert [e.text for e in entries if isinstance(e, UserTurn)] == [
        "A question that is answered",
        "A question cut off by kill -9",
    ]
    assert len([e for e in entries if isinstance(e, RunRecorded)]) == 1
    with terminal(tmp_path, "--config", config, "-c") as term:
        screen = term.wait_for("resumed session")
        started(term)
        screen = term.screen()
        assert "A question that is answered" in screen
        assert "A question cut off by kill -9" in screen and "(no answer)" in screen
        assert "2 turns" in screen
