"""What a run shows while it executes, in a real terminal (tmux): the presentation typing
itself out, tool calls as they run and end, the status line; and ``@file`` and ``!cmd``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.repl_e2e.tmux import lines_with, started, terminal

TASK = "Name three uses of a paperclip"
VOTE_PROMPT = "Press Ctrl+O to override, Enter to continue"


def _config(path: Path, **backend: Any) -> Path:
    agents = [
        {"id": f"scripted{i}", "backend": {"type": "scripted", "seed": i, **backend}}
        for i in (1, 2)
    ]
    data: dict[str, Any] = {"agents": agents}
    if "tool_steps" in backend:
        data["orchestrator"] = {"context_paths": [{"path": str(path.parent / "context")}]}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_the_presentation_types_itself_out_under_the_agents(tmp_path: Path) -> None:
    config = _config(tmp_path / "slow.yaml", latency=3)
    with terminal(tmp_path, "--config", str(config)) as term:
        started(term)
        term.type(TASK)
        term.wait_for(VOTE_PROMPT, timeout=60)
        term.keys("Enter")
        screen = term.wait(lambda s: " writes:" in s and "Running ·" in s, "streamed text")
        [writes] = lines_with(screen, " writes:")
        presenter = writes.split()[0]
        streamed = screen.split(writes + "\n", 1)[1].splitlines()[0].strip()
        assert streamed  # the first line of the answer, while the run still runs
        done = term.wait_for("completed: winner", timeout=60)
        assert f"presented by {presenter}" in done
        assert streamed in done.split("completed: winner")[0]


def test_tool_calls_are_printed_as_they_start_and_end(tmp_path: Path) -> None:
    context = tmp_path / "context"
    context.mkdir()
    (context / "notes.txt").write_text("buy more paperclips\n", encoding="utf-8")
    steps = [{"tool": "read_file", "arguments": {"path": str(context / "notes.txt")}}]
    config = _config(tmp_path / "tools.yaml", tool_steps=steps)
    with terminal(tmp_path, "--config", str(config), "--agent-mode", "single") as term:
        started(term)
        term.type(TASK)
        term.wait_for(VOTE_PROMPT, timeout=60)
        term.keys("Enter")
        screen = term.wait_for("completed: winner", timeout=60)
        [start] = lines_with(screen, "⏺ scripted1 read_file(")
        [end] = lines_with(screen, "⎿ scripted1 read_file: ok in ")
        assert '{"path":"/' in start  # the arguments, cut at the terminal's width
        assert "buy more paperclips" in end


def test_the_status_line_names_the_model_and_the_context_after_a_run(tmp_path: Path) -> None:
    with terminal(tmp_path) as term:
        assert "model scripted · cost -" in started(term)
        term.type(TASK)
        term.wait_for(VOTE_PROMPT, timeout=60)
        term.keys("Enter")
        term.wait_for("completed: winner", timeout=60)
        screen = term.wait_for("model scripted · context ")
        assert lines_with(screen, "tokens · cost -")


def test_a_missing_attachment_is_refused_on_the_screen_and_a_shell_commands_output_shown(
    tmp_path: Path,
) -> None:
    with terminal(tmp_path) as term:
        started(term)
        term.type("Summarise @nowhere.txt")
        term.wait_for("@nowhere.txt: no such file (from ")
        term.keys("C-u")
        term.type("!echo hello from the shell")
        screen = term.wait_for("[exit code 0]")
        assert "hello from the shell\n[exit code 0]" in screen


def test_lines_typed_while_the_screen_prints_are_sent_whole(tmp_path: Path) -> None:
    """Printing above the prompt must not put the terminal in cooked mode: there, Enter
    arrived as a newline (the line stayed in the input) and Ctrl+D was lost."""
    context = tmp_path / "context"
    context.mkdir()
    (context / "notes.txt").write_text("buy more paperclips\n", encoding="utf-8")
    step = {"tool": "read_file", "arguments": {"path": str(context / "notes.txt")}}
    config = _config(tmp_path / "busy.yaml", latency=0.2, tool_steps=[step] * 20)
    with terminal(tmp_path, "--config", str(config)) as term:
        started(term)
        term.type(TASK)
        term.wait_for("⏺ scripted")  # tool calls print continuously from now on
        for index in range(12):
            term.keys("-l", f"later {index}")
            term.keys("Enter")
            term.wait_for(f"queued: later {index}")
        term.keys("C-c")
        term.wait_for("12 queued turn(s) dropped")
        term.keys("C-d")
        assert term.wait_until_exited() == 0
