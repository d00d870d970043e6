"""``conclave`` in a real terminal (tmux): what a new user does on the scripted backend, read
back from the screen."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import yaml

from tests.repl_e2e.tmux import started, terminal

TASK = "Name three uses of a paperclip"
VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"


def _slow_config(path: Path) -> Path:
    """Three scripted agents whose calls take 30 s: a run that is still going when cancelled."""
    agents = [
        {"id": f"scripted{i}", "backend": {"type": "scripted", "seed": i, "latency": 30}}
        for i in (1, 2, 3)
    ]
    path.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    return path


def test_a_task_runs_the_vote_waits_for_enter_and_ctrl_d_quits(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.type(TASK)
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        screen = term.wait_for("completed: winner")
        assert "decided by votes" in screen
        assert "votes: agent" in screen
        term.keys("C-d")
        assert term.wait_until_exited() == 0
    assert list(tmp_path.glob(".conclave/runs/*/events.jsonl"))


def test_shift_tab_turns_plan_mode_on_in_the_mode_bar(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        started(term)
        assert "[plan]" not in term.wait_bar("plan mode: off")
        term.keys("BTab")
        assert "[plan]" in term.wait_bar("plan mode: on")
        term.keys("BTab")
        assert "[plan]" not in term.wait_bar("plan mode: off")


def test_single_agent_with_refinement_off_answers_without_a_vote(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.keys("M-a")
        term.wait_bar("agents: single")
        term.keys("M-r")
        term.wait_bar("refinement: off")
        term.type(TASK)
        screen = term.wait_for("completed: winner")
        assert "winner scripted1" in screen
        assert VOTE_PROMPT not in screen


def test_ctrl_o_lets_another_agent_present(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.type(TASK)
        term.wait_for(VOTE_PROMPT)
        term.keys("C-o")
        term.wait_for("Who presents the final answer?")
        term.keys("3")
        screen = term.wait_for("completed: winner")
        assert "chosen by override" in screen
        assert "presented by scripted3" in screen


def test_ctrl_c_cancels_the_run_and_the_repl_stays(tmp_path: Path) -> None:
    config = _slow_config(tmp_path / "slow.yaml")
    with terminal(tmp_path, "repl", "--config", str(config)) as term:
        started(term)
        term.type(TASK)
        term.wait_for("Running ·")
        term.keys("BTab")  # asks before stopping the agents' work
        term.wait_for("Work in progress will stop")
        term.keys("2")  # keep working
        term.wait_for("still working; plan mode is off")
        term.wait_bar("plan mode: off")
        term.keys("C-c")
        screen = term.wait_for("cancelled: winner")
        assert "Running ·" not in screen
        term.keys("BTab")  # the REPL still answers
        term.wait_bar("plan mode: on")
        term.keys("C-d")
        assert term.wait_until_exited() == 0


def test_sigterm_cancels_the_run_closes_its_log_and_exits_143(tmp_path: Path) -> None:
    config = _slow_config(tmp_path / "slow.yaml")
    with terminal(tmp_path, "repl", "--config", str(config)) as term:
        started(term)
        term.type(TASK)
        term.wait_for("Running ·")
        os.kill(term.pid(), signal.SIGTERM)
        assert term.wait_until_exited() == 143
    [log] = tmp_path.glob(".conclave/runs/*/events.jsonl")
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["kind"], last["termination"]) == ("run_ended", "cancelled")
