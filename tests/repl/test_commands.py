"""Slash commands and their completion."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from conclave.config.modes import AgentMode, CollaborationMode
from conclave.ui.repl.commands import SlashCompleter
from conclave.ui.repl.layout import mode_bar
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import BUSY, Dialog, ReplState
from tests.repl.harness import Session, config, play


def test_mode_with_an_unknown_name_says_which_modes_are_valid(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/mode turbo")
        await session.until(lambda: "invalid mode" in session.transcript(), "the error")
        assert 'invalid mode "turbo". Valid modes: default, plan, execute' in session.transcript()

    state = play(scenario, tmp_path)
    assert state.collaboration is CollaborationMode.DEFAULT


def test_mode_with_a_name_switches_to_it_and_the_bar_shows_its_chip(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/mode execute")
        await session.until(
            lambda: session.state.collaboration is CollaborationMode.EXECUTE, "execute mode"
        )
        assert "[execute]" in fragments_text(session.render(mode_bar))
        session.type("/mode plan")
        await session.until(lambda: session.state.plan_mode, "plan mode")

    play(scenario, tmp_path)


def test_mode_alone_opens_a_picker_of_the_three_modes(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/mode")
        await session.until(lambda: session.state.dialog is Dialog.MODE_PICKER, "the picker")
        session.press("3")
        await session.until(lambda: session.state.dialog is Dialog.NONE, "the choice")

    state = play(scenario, tmp_path)
    assert state.collaboration is CollaborationMode.EXECUTE


def test_a_mode_other_than_plan_is_refused_while_agents_execute(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("/mode execute")
        await session.until(lambda: session.state.notice == BUSY, "the refusal")
        assert session.state.collaboration is CollaborationMode.DEFAULT
        session.press("\x03")

    play(scenario, tmp_path, conclave=config(latency=5.0))


def test_agents_with_an_id_runs_only_that_agent(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/agents agent-3")
        await session.until(lambda: session.state.active_agent == "agent-3", "agent-3")
        assert session.state.modes.agent_mode is AgentMode.SINGLE
        result = await session.result_of("Name three uses of a paperclip")
        assert result.winner == "agent-3"

    play(scenario, tmp_path)


def test_agents_with_an_unknown_id_names_the_configured_ones(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/agents agent-9")
        await session.until(lambda: "no agent" in session.transcript(), "the error")
        assert 'no agent "agent-9"; configured agents: agent-1, agent-2, agent-3' in (
            session.transcript()
        )

    play(scenario, tmp_path)


def test_cost_and_log_report_the_runs_so_far(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        result = await session.result_of("Name three uses of a paperclip")
        session.type("/cost")
        session.type("/log")
        await session.until(lambda: "replay" in session.transcript(), "the log line")
        text = session.transcript()
        assert f"1 run(s), {result.llm_calls:,} LLM calls" in text
        assert str(result.log_dir) in text

    play(scenario, tmp_path)


def test_status_shows_the_modes_and_the_conversation(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/status")
        await session.until(lambda: "conversation:" in session.transcript(), "the status")
        text = session.transcript()
        assert "run: idle" in text
        assert "collaboration mode: default" in text
        assert "agents: multi; refinement on" in text

    play(scenario, tmp_path)


def test_clear_starts_a_new_conversation(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await session.result_of("first")
        assert len(session.state.history) == 1
        session.type("/clear")
        await session.until(lambda: not session.state.history, "the history cleared")

    play(scenario, tmp_path)


def test_help_lists_every_command(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/help")
        await session.until(lambda: "keys:" in session.transcript(), "the help")
        for name in ("/mode", "/agents", "/status", "/cost", "/log", "/clear", "/help", "/quit"):
            assert name in session.transcript()

    play(scenario, tmp_path)


def test_an_unknown_command_names_the_commands(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/frobnicate")
        await session.until(lambda: "unknown command" in session.transcript(), "the error")
        assert 'unknown command "/frobnicate"; commands: /mode, /agents' in session.transcript()

    play(scenario, tmp_path)


def test_quit_ends_the_session(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/quit")
        await session.until(lambda: not session.repl.app.is_running, "the application's end")

    play(scenario, tmp_path)


def _completions(text: str) -> list[str]:
    state = ReplState(agents=("alpha", "beta", "alps"))
    found = SlashCompleter(state).get_completions(Document(text), CompleteEvent())
    return [completion.text for completion in found]


def test_slash_commands_complete_by_prefix() -> None:
    assert _completions("/mo") == ["/mode"]
    assert _completions("/c") == ["/cost", "/clear", "/compact", "/correct"]


def test_mode_names_and_agent_ids_complete_after_their_command() -> None:
    assert _completions("/mode ex") == ["execute"]
    assert _completions("/agents al") == ["alpha", "alps"]


def test_plain_text_is_not_completed() -> None:
    assert _completions("mo") == []


def test_enter_on_a_prefix_with_one_completion_runs_that_command(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press("/hel")
        await session.until(
            lambda: (
                session.repl.buffer.complete_state is not None
                and len(session.repl.buffer.complete_state.completions) == 1
            ),
            "the completion menu",
        )
        session.press("\r")
        await session.until(lambda: "keys:" in session.transcript(), "the help")

    play(scenario, tmp_path)


@pytest.mark.parametrize("line", ["/exit", "/quit", "exit", "quit", "  Quit  "])
def test_exit_and_quit_leave_the_repl(line: str, tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type(line)
        await session.until(lambda: session.repl.quitting, f"{line!r} to quit")
        assert session.state.usage.runs == 0

    play(scenario, tmp_path)


def test_exit_inside_a_longer_line_is_a_task_not_a_quit(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        result = await session.result_of("exit the building calmly")
        assert result.final_answer is not None
        assert not session.repl.quitting

    play(scenario, tmp_path)
