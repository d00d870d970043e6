"""What the REPL shows while a run executes: each agent's text as it streams, and every tool
call as it starts and ends."""

from __future__ import annotations

import json
from pathlib import Path

from conclave.actors.events.loop import ToolCallFinished, ToolCallStarted
from conclave.actors.events.view import RunView
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.backends import ToolStep
from conclave.config.schema.context import ContextPath
from conclave.ui.repl.render import (
    TOOL_PREVIEW,
    fragments_text,
    progress_lines,
    tool_finished_line,
    tool_started_line,
)
from tests.repl.harness import ENTER, Session, config, play


def test_the_presenters_text_is_on_the_screen_while_it_streams(tmp_path: Path) -> None:
    seen: list[str] = []

    async def scenario(session: Session) -> None:
        state = session.state
        session.type("Name three uses of a paperclip")
        await session.until(lambda: state.override is not None, "the vote")
        session.press(ENTER)  # the winner presents: its text streams over 0.5 s

        def streaming() -> bool:
            live = state.live
            return live is not None and bool(live.streams) and state.running

        await session.until(streaming, "streamed text on the screen")
        live = state.live
        assert live is not None and live.streaming is not None
        seen.append(live.streams[live.streaming])
        await session.until(lambda: not state.running, "the run's end")

    state = play(scenario, tmp_path, conclave=config(2, latency=1.0))
    result = state.last_result
    assert result is not None and result.final_answer is not None
    assert seen[0].strip()
    assert result.final_answer.startswith(seen[0])  # what was shown is the answer's beginning


def test_the_progress_block_shows_the_text_an_agent_is_writing() -> None:
    view = RunView()
    text = "First line of the answer\nSecond line, still coming"

    lines = progress_lines(
        view, status="Running", elapsed=1.0, streams={"agent-1": text}, streaming="agent-1"
    )

    shown = fragments_text(lines)
    assert "agent-1 writes:" in shown
    assert "    First line of the answer\n" in shown
    assert "    Second line, still coming" in shown


def test_an_agents_progress_row_ends_with_the_last_words_it_streamed() -> None:
    view = RunView()
    view._update("agent-1", round=1)
    streams = {"agent-1": "a long reply whose last words are these"}

    lines = progress_lines(view, status="Running", elapsed=1.0, width=80, streams=streams)

    row = next(line for line in fragments_text(lines).splitlines() if "agent-1 " in line)
    assert row.endswith("whose last words are these")


def _with_tools(tmp_path: Path) -> ConclaveConfig:
    notes = tmp_path / "context" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("buy more paperclips\n")
    steps = (
        ToolStep(tool="read_file", arguments={"path": str(notes)}),
        ToolStep(tool="read_file", arguments={"path": str(notes.parent / "missing.txt")}),
    )
    backend = ScriptedBackendConfig(seed=1, tool_steps=steps)
    return ConclaveConfig(
        agents=(AgentConfig(id="agent-1", backend=backend),),
        orchestrator=OrchestratorConfig(
            quiet_period=None, context_paths=(ContextPath(path=notes.parent),)
        ),
    )


def test_each_tool_call_is_printed_as_it_starts_and_as_it_ends(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await session.result_of("What do my notes say?")

    state = play(scenario, tmp_path, conclave=_with_tools(tmp_path))
    printed = "".join(fragments_text(block) for block in state.transcript)
    lines = printed.splitlines()
    started = [line for line in lines if line.startswith("⏺ agent-1 read_file(")]
    ended = [line for line in lines if line.startswith("  ⎿ agent-1 read_file: ")]
    assert len(started) == 2
    assert "notes.txt" in started[0]
    assert len(ended) == 2
    assert ended[0].startswith("  ⎿ agent-1 read_file: ok in ")
    assert "buy more paperclips" in ended[0]
    assert ended[1].startswith("  ⎿ agent-1 read_file: failed in ")
    # each call's end comes after its start, and both before the answer's summary
    assert lines.index(started[0]) < lines.index(ended[0]) < lines.index(started[1])
    assert lines.index(ended[1]) < next(i for i, x in enumerate(lines) if x.startswith("● "))


def test_a_tool_calls_end_shows_only_the_head_of_a_long_output() -> None:
    event = ToolCallFinished(
        at=0.0,
        agent="agent-1",
        tool="read_file",
        call_id="c1",
        arguments="{}",
        output="x" * 2000 + "\n" + "y" * 10,
        duration=0.25,
        ok=True,
        error=None,
    )

    line = fragments_text(tool_finished_line(event))

    assert line.startswith("  ⎿ agent-1 read_file: ok in 0.25s · xxx")
    assert line.endswith("…\n")
    assert len(line) < TOOL_PREVIEW + 50
    assert "\n" not in line[:-1]


def test_long_tool_arguments_keep_their_end_and_lose_their_middle() -> None:
    path = "/tmp/" + "deep/" * 40 + "notes.txt"
    started = ToolCallStarted(
        at=0.0, agent="a1", tool="read_file", call_id="c1", arguments=json.dumps({"path": path})
    )

    line = fragments_text(tool_started_line(started))

    assert line.startswith('⏺ a1 read_file({"path": "/tmp/deep/')
    assert line.endswith('deep/notes.txt"})\n')
    assert "…" in line and len(line) < 140
