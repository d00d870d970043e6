"""``!command`` runs a shell command, shows its output, and offers it to the next turn."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conclave.actors.llm.protocol import CompletionRequest
from conclave.ui.repl.shell import MAX_CONTEXT_BYTES, ShellEnd, context_text, run_shell
from tests.repl.backends import recording
from tests.repl.harness import CTRL_C, Session, config, play


def _prompt(request: CompletionRequest) -> str:
    return "\n".join(m.content for m in request.messages if m.content)


def test_a_commands_output_is_shown_and_goes_with_the_next_turn_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    requests: dict[str, list[CompletionRequest]] = {}

    async def scenario(session: Session) -> None:
        session.type("!echo hello from the shell; exit 3")
        await session.until(lambda: "[exit code 3]" in session.transcript(), "the output")
        await session.result_of("What did it say?")
        await session.result_of("And now?")

    state = play(scenario, tmp_path, conclave=config(1), backend_factory=recording(requests))
    shown = "".join(text for block in state.transcript for _, text, *_ in block)
    assert "! echo hello from the shell; exit 3\nhello from the shell\n[exit code 3]\n" in shown
    first = requests["agent-1"][0]
    carried = "$ echo hello from the shell; exit 3\nhello from the shell\n[exit code 3]"
    assert carried in _prompt(first)
    assert "> What did it say?\n" in shown  # the transcript shows what was typed
    asked, again = state.history
    assert asked.task.startswith("Output of commands I ran in my shell, for context:\n")
    assert asked.task.endswith("\n\nWhat did it say?")
    assert again.task == "And now?"  # offered once: it is in the conversation from then on


def test_ctrl_c_stops_a_running_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    took: list[float] = []

    async def scenario(session: Session) -> None:
        session.type("!sleep 30")
        await session.until(lambda: session.repl.shell.running, "the command")
        await asyncio.sleep(0.2)
        start = time.monotonic()
        session.press(CTRL_C)
        await session.until(lambda: "[stopped by Ctrl+C]" in session.transcript(), "the stop")
        took.append(time.monotonic() - start)
        assert not session.repl.shell.running

    play(scenario, tmp_path, conclave=config(1))
    assert took[0] < 5


def test_an_empty_command_says_what_to_type(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("!")
        await session.until(lambda: session.state.notice, "the notice")
        assert session.state.notice == "type a shell command after !, for example: !git status"
        assert not session.repl.shell.running

    play(scenario, tmp_path, conclave=config(1))


def test_a_command_past_its_time_is_stopped(tmp_path: Path) -> None:
    async def main() -> None:
        result = await run_shell("sleep 30", cwd=tmp_path, stop=asyncio.Event(), timeout=0.2)
        assert result.end is ShellEnd.TIMED_OUT
        assert result.exit_code is None

    asyncio.run(main())


def test_only_the_head_of_a_long_output_goes_to_the_model(tmp_path: Path) -> None:
    async def main() -> str:
        result = await run_shell(
            f"head -c {MAX_CONTEXT_BYTES * 2} /dev/zero | tr '\\0' x",
            cwd=tmp_path,
            stop=asyncio.Event(),
        )
        return context_text(result)

    text = asyncio.run(main())
    assert f"[{MAX_CONTEXT_BYTES:,} more bytes not shown]" in text
    assert len(text) < MAX_CONTEXT_BYTES + 200
