"""The REPL's keys, sent through a pipe to the real application: mode toggles, tabs, override,
continue, cancel, clear and quit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conclave.actors.run.result import DecidedBy, Termination
from conclave.config.modes import AgentMode, CollaborationMode
from conclave.ui.repl.layout import mode_bar
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.service import PUBLISH_INTERVAL
from conclave.ui.repl.state import BUSY, Dialog
from tests.repl.harness import (
    ALT_A,
    ALT_R,
    ALT_RIGHT,
    CTRL_C,
    CTRL_D,
    CTRL_O,
    CTRL_R,
    ENTER,
    ESC,
    SHIFT_TAB,
    Session,
    config,
    play,
)


def test_the_modes_start_plan_off_multi_agent_refinement_on(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        bar = fragments_text(session.render(mode_bar))
        assert "plan mode: off" in bar
        assert "agents: multi" in bar
        assert "refinement: on" in bar
        assert "[" not in bar.replace("(", "")  # no collaboration chip in default mode

    state = play(scenario, tmp_path)
    assert state.collaboration is CollaborationMode.DEFAULT


def test_shift_tab_turns_plan_mode_on_and_off_and_the_bar_shows_the_plan_chip(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.press(SHIFT_TAB)
        await session.until(lambda: session.state.plan_mode, "plan mode on")
        bar = fragments_text(session.render(mode_bar))
        assert "plan mode: on" in bar
        assert "[plan]" in bar
        session.press(SHIFT_TAB)
        await session.until(lambda: not session.state.plan_mode, "plan mode off")
        assert "[plan]" not in fragments_text(session.render(mode_bar))

    play(scenario, tmp_path)


def test_alt_a_and_alt_r_toggle_agent_mode_and_refinement(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press(ALT_A, ALT_R)
        await session.until(lambda: not session.state.modes.refinement, "refinement off")
        bar = fragments_text(session.render(mode_bar))
        assert "agents: single" in bar
        assert "refinement: off" in bar

    state = play(scenario, tmp_path)
    assert state.modes.agent_mode is AgentMode.SINGLE


def test_a_click_on_a_toggle_changes_it_as_its_key_does(tmp_path: Path) -> None:
    from prompt_toolkit.data_structures import Point
    from prompt_toolkit.mouse_events import MouseButton, MouseEvent, MouseEventType

    async def scenario(session: Session) -> None:
        fragments = session.render(mode_bar)
        refinement = next(f for f in fragments if f[1] == " refinement: ")
        click = MouseEvent(Point(0, 0), MouseEventType.MOUSE_UP, MouseButton.LEFT, frozenset())
        refinement[2](click)  # type: ignore[misc]
        assert not session.state.modes.refinement

    play(scenario, tmp_path)


def test_toggles_are_refused_while_agents_execute_and_a_key_says_why(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run to start")
        styles = [fragment[0] for fragment in session.render(mode_bar) if "plan" in fragment[1]]
        assert styles
        assert all(style == "class:bar.disabled" for style in styles)  # dimmed
        session.press(ALT_A, ALT_R)  # Shift+Tab asks instead: tests/repl/test_mode_switch.py
        await session.until(lambda: session.state.notice == BUSY, "the refusal")
        modes = session.state.modes
        assert (session.state.plan_mode, modes.agent_mode, modes.refinement) == (
            False,
            AgentMode.MULTI,
            True,
        )
        session.press(CTRL_C)

    play(scenario, tmp_path, conclave=config(latency=5.0))


def test_in_single_mode_alt_right_makes_the_next_agent_the_one_that_runs(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.press(ALT_A, ALT_RIGHT)
        await session.until(lambda: session.state.active_agent == "agent-2", "the second tab")
        result = await session.result_of("Name three uses of a paperclip")
        assert {a.agent for a in result.answers} == {"agent-2"}
        assert result.winner == "agent-2"

    play(scenario, tmp_path)


def test_ctrl_o_then_a_row_makes_that_agent_the_presenter(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.override is not None, "the vote")
        window = session.state.override
        assert window is not None
        chosen = window.rows[1]
        assert chosen.agent != window.winner
        session.press(CTRL_O)
        await session.until(lambda: session.state.dialog is Dialog.OVERRIDE, "the dialog")
        session.press("2")
        await session.until(lambda: session.state.usage.runs == 1, "the run's end")
        result = session.state.last_result
        assert result is not None
        assert result.presenter == chosen.agent
        assert result.decided_by is DecidedBy.OVERRIDE

    play(scenario, tmp_path)


def test_esc_at_the_vote_closes_nothing_and_the_run_still_waits_to_present(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.override is not None, "the vote")
        session.press(ESC)
        await session.until(lambda: "Ctrl+C" in session.state.notice, "the hint to cancel")
        assert session.state.override is not None
        assert session.state.usage.runs == 0
        session.press(ENTER)
        await session.until(lambda: session.state.usage.runs == 1, "the run's end")
        result = session.state.last_result
        assert result is not None
        assert result.termination is Termination.COMPLETED

    play(scenario, tmp_path)


def test_esc_in_the_override_dialog_closes_it_and_the_vote_still_waits(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.override is not None, "the vote")
        session.press(CTRL_O)
        await session.until(lambda: session.state.dialog is Dialog.OVERRIDE, "the dialog")
        session.press(ESC)
        await session.until(lambda: session.state.dialog is Dialog.NONE, "the dialog closed")
        await session.settle()
        assert session.state.override is not None
        assert session.state.running

    play(scenario, tmp_path)


def test_a_two_digit_row_number_chooses_that_row_of_the_override_dialog(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.override is not None, "the vote")
        window = session.state.override
        assert window is not None
        assert len(window.rows) == 12
        session.press(CTRL_O)
        await session.until(lambda: session.state.dialog is Dialog.OVERRIDE, "the dialog")
        session.press("1")
        await session.until(lambda: session.state.selected == 0, "row 1 highlighted")
        assert session.state.dialog is Dialog.OVERRIDE  # 1 may yet be 10, 11 or 12
        session.press("2")
        await session.until(lambda: session.state.usage.runs == 1, "the run's end")
        result = session.state.last_result
        assert result is not None
        assert result.presenter == window.rows[11].agent
        assert result.decided_by is DecidedBy.OVERRIDE

    play(scenario, tmp_path, conclave=config(agents=12))


def test_enter_at_the_vote_continues_with_the_winner(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.override is not None, "the vote")
        window = session.state.override
        assert window is not None
        session.press(ENTER)
        await session.until(lambda: session.state.usage.runs == 1, "the run's end")
        result = session.state.last_result
        assert result is not None
        assert result.presenter == window.winner
        assert result.decided_by is DecidedBy.VOTES

    play(scenario, tmp_path)


def test_ctrl_c_cancels_the_run_keeps_its_result_and_the_repl_goes_on(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run to start")
        session.press(CTRL_C)
        await session.until(lambda: session.state.usage.runs == 1, "the cancelled run's end")
        result = session.state.last_result
        assert result is not None
        assert result.termination is Termination.CANCELLED
        assert not session.state.running
        # The result's block is printed in a change of its own, posted after the state's.
        await session.until(lambda: "cancelled" in session.transcript(), "the result's block")
        session.press(SHIFT_TAB)  # the REPL still takes keys
        await session.until(lambda: session.state.plan_mode, "plan mode after the cancel")

    play(scenario, tmp_path, conclave=config(latency=5.0))


def test_ctrl_c_at_an_idle_prompt_clears_the_line(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press("half a thought")
        await session.until(lambda: session.repl.buffer.text == "half a thought", "the text")
        session.press(CTRL_C)
        await session.until(lambda: session.repl.buffer.text == "", "the line cleared")
        assert session.state.usage.runs == 0

    play(scenario, tmp_path)


def test_ctrl_c_twice_at_an_empty_idle_prompt_quits(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press(CTRL_C)
        await session.until(lambda: "Ctrl+C again" in session.state.notice, "the warning")
        assert not session.repl.quitting
        session.press(CTRL_C)
        await session.until(lambda: session.repl.quitting, "quitting")

    play(scenario, tmp_path)


def test_typing_between_two_ctrl_c_starts_the_count_again(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press(CTRL_C)
        await session.until(lambda: "Ctrl+C again" in session.state.notice, "the warning")
        session.press("x", CTRL_C)  # clears the line typed since
        await session.until(lambda: session.repl.buffer.text == "", "the line cleared")
        session.press(CTRL_C)
        await session.until(lambda: "Ctrl+C again" in session.state.notice, "the warning again")
        assert not session.repl.quitting

    play(scenario, tmp_path)


def test_ctrl_r_finds_an_earlier_line_and_enter_takes_it(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/status")
        session.type("/cost")
        await session.until(lambda: "LLM calls" in session.transcript(), "/cost's answer")
        session.press(CTRL_R, "sta")
        await session.settle()
        session.press(ENTER)
        await session.until(lambda: session.repl.buffer.text == "/status", "the line found")

    play(scenario, tmp_path)


def test_ctrl_d_cancels_the_run_and_exits_once_its_log_is_closed(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run to start")
        session.press(CTRL_D)

    state = play(scenario, tmp_path, conclave=config(latency=5.0))
    assert state.last_log_dir is not None
    last = (state.last_log_dir / "events.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["kind"] == "run_ended"
    assert json.loads(last)["termination"] == "cancelled"


def test_enter_while_a_run_executes_queues_the_turn_until_it_ends(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("first")
        await session.until(lambda: session.state.override is not None, "the first run's vote")
        session.type("second")  # not a continue: the line has text
        await session.until(lambda: session.state.queued == ["second"], "the queued turn")
        assert session.state.usage.runs == 0
        await session.finish(0, "first")
        await session.finish(1, "second")
        assert [turn.task for turn in session.state.history] == ["first", "second"]
        assert session.state.queued == []

    play(scenario, tmp_path)


def test_ctrl_c_also_drops_the_queued_turns(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("first")
        await session.until(lambda: session.state.running, "the first run")
        session.type("second")
        await session.until(lambda: session.state.queued == ["second"], "the queued turn")
        session.press(CTRL_C)
        await session.until(lambda: not session.state.running, "the cancel")
        assert session.state.queued == []
        assert session.state.usage.runs == 1
        assert "1 queued turn(s) dropped" in session.transcript()

    play(scenario, tmp_path, conclave=config(latency=5.0))


def test_the_runs_timer_stands_still_while_the_vote_waits_for_a_person(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.override is not None, "the vote")
        await asyncio.sleep(3 * PUBLISH_INTERVAL)  # the screen has read the paused timer
        shown = session.state.elapsed
        await asyncio.sleep(5 * PUBLISH_INTERVAL)
        assert session.state.elapsed == shown
        assert session.state.running

    play(scenario, tmp_path)


def test_ctrl_c_right_after_enter_cancels_the_run_about_to_open(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press("a slow task" + ENTER + CTRL_C)  # read and sent together
        await session.until(lambda: session.state.usage.runs == 1, "the cancelled run's end")
        result = session.state.last_result
        assert result is not None
        assert result.termination is Termination.CANCELLED

    play(scenario, tmp_path, conclave=config(latency=5.0))
