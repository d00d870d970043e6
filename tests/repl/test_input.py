"""Input comfort: several lines, pasted text, persistent history, Esc, clicks on tabs,
and the answers on demand."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.data_structures import Point
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.mouse_events import MouseButton, MouseEvent, MouseEventType

from conclave.actors.run.result import Termination
from conclave.config.modes import AgentMode, ModeState
from conclave.ui.repl.app import _open_history, history_path
from conclave.ui.repl.layout import tab_bar
from tests.repl.harness import CTRL_C, ENTER, ESC, Session, config, play

ALT_ENTER = "\x1b\r"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def test_a_backslash_at_the_end_of_a_line_continues_on_the_next(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("first line \\")
        await session.until(lambda: session.repl.buffer.text == "first line \n", "a new line")
        await session.result_of("second line")
        assert session.state.history[-1].task == "first line \nsecond line"

    play(scenario, tmp_path)


def test_alt_enter_inserts_a_new_line_without_sending(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press("one", ALT_ENTER, "two")
        await session.until(lambda: session.repl.buffer.text == "one\ntwo", "two lines")
        assert session.state.usage.runs == 0

    play(scenario, tmp_path)


def test_pasted_lines_stay_in_the_input_until_enter(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press(PASTE_START + "line one\rline two\r" + PASTE_END)
        await session.until(lambda: "line two" in session.repl.buffer.text, "the paste")
        assert session.repl.buffer.text == "line one\nline two\n"
        assert not session.state.running
        await session.result_of("")
        assert session.state.history[-1].task == "line one\nline two"

    play(scenario, tmp_path)


def test_esc_during_a_run_does_not_cancel_it_and_says_ctrl_c_does(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.press(ESC)
        await session.until(lambda: "Ctrl+C" in session.state.notice, "the hint to cancel")
        assert session.state.running
        assert session.state.usage.runs == 0
        session.press(CTRL_C)
        await session.until(lambda: session.state.usage.runs == 1, "the cancelled run's end")
        assert session.state.last_result is not None
        assert session.state.last_result.termination is Termination.CANCELLED

    play(scenario, tmp_path, conclave=config(latency=5.0))


def test_a_click_on_a_tab_makes_its_agent_active_in_single_mode(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        fragments = session.render(tab_bar)
        third = next(f for f in fragments if f[1] == " agent-3 ")
        click = MouseEvent(Point(0, 0), MouseEventType.MOUSE_UP, MouseButton.LEFT, frozenset())
        third[2](click)  # type: ignore[misc]
        assert session.state.active_agent == "agent-3"
        redrawn = session.render(tab_bar)
        assert next(f for f in redrawn if f[1] == " agent-3 ")[0] == "class:tab.active"

    play(scenario, tmp_path, modes=ModeState(agent_mode=AgentMode.SINGLE))


def test_answers_lists_the_runs_answers_and_shows_one_in_full(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        result = await session.result_of("Name three uses of a paperclip")
        answer = result.answers[1]
        session.type("/answers")
        await session.until(lambda: "answers (/answers LABEL" in session.transcript(), "the list")
        session.type(f"/answers {answer.label}")
        title = f"answer {answer.label} by {answer.agent}:"
        await session.until(lambda: title in session.transcript(), "the answer in full")
        assert answer.content in session.transcript()

    play(scenario, tmp_path)


def test_the_history_file_is_under_xdg_state_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/somewhere/state")
    assert history_path() == Path("/somewhere/state/conclave/repl_history")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert history_path() == Path("/home/someone/.local/state/conclave/repl_history")


def test_sent_lines_are_kept_in_the_history_file_for_the_next_session(tmp_path: Path) -> None:
    path = tmp_path / "state" / "conclave" / "repl_history"
    history, problem = _open_history(path)
    assert isinstance(history, FileHistory)
    assert problem == ""
    history.store_string("Name three uses of a paperclip")
    again, _ = _open_history(path)
    assert list(again.load_history_strings()) == ["Name three uses of a paperclip"]


def test_an_unwritable_history_is_kept_in_memory_and_says_why(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    history, problem = _open_history(blocker / "conclave" / "repl_history")
    assert isinstance(history, InMemoryHistory)
    assert "input history is not kept" in problem
    assert "XDG_STATE_HOME" in problem


def test_enter_on_an_empty_line_sends_nothing(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press(ENTER, ENTER)
        await session.settle()
        assert session.state.usage.runs == 0
        assert not session.state.running

    play(scenario, tmp_path)
