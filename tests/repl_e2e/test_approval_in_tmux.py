"""Tool approval in a real terminal: a delete asks, is denied with feedback, and the agent
goes on to its answer."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.repl_e2e.tmux import started, terminal

VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"


def _config(path: Path) -> Path:
    """One scripted agent that writes notes.txt, deletes it, then answers."""
    steps = [
        {"tool": "write_file", "arguments": {"path": "notes.txt", "content": "draft"}},
        {"tool": "delete_file", "arguments": {"path": "notes.txt"}},
    ]
    agent = {"id": "tidy", "backend": {"type": "scripted", "latency": 0, "tool_steps": steps}}
    data = {"agents": [agent], "orchestrator": {"tools": True}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_delete_asks_is_denied_with_feedback_and_the_agent_goes_on(tmp_path: Path) -> None:
    config = _config(tmp_path / "tidy.yaml")
    with terminal(tmp_path, "--config", str(config), "--permission-mode", "accept-edits") as term:
        started(term)
        term.type("Tidy the notes")
        term.wait_for("Allow delete_file?")
        term.wait_for("Why it asks: delete_file deletes notes.txt")
        term.keys("3")
        term.wait_for("Feedback for the agent")
        term.type("keep the notes")
        term.wait_for(VOTE_PROMPT)
        term.keys("Enter")
        term.wait_for("completed: winner")
    # Read as plain JSON: this process has not loaded every message type the REPL logged.
    [log] = tmp_path.glob(".conclave/runs/*/events.jsonl")
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    [delete] = [
        e for e in events if e["kind"] == "tool_call_finished" and e["tool"] == "delete_file"
    ]
    assert delete["error"] == (
        "the call to delete_file was refused: the user denied it: keep the notes"
    )
