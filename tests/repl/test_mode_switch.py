"""Switching to plan mode while agents work asks first ("work in progress will stop"), then
stops the work and turns plan mode on; keeping on working changes nothing. Each mode's chip
has its own style."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.run.result import Termination
from conclave.config.modes import CollaborationMode, ModeState
from conclave.ui.repl.layout import mode_bar
from conclave.ui.repl.mode_switch import STOP_WARNING
from conclave.ui.repl.state import Dialog
from tests.repl.harness import ESC, SHIFT_TAB, Session, config, play

SLOW = config(latency=5.0)


async def _confirming(session: Session, *keys: str) -> None:
    session.type("a slow task")
    await session.until(lambda: session.state.running, "the run")
    session.press(*keys)
    await session.until(lambda: session.state.dialog is Dialog.CONFIRM_MODE, "the card")


def test_shift_tab_while_agents_work_asks_before_stopping_them(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await _confirming(session, SHIFT_TAB)
        assert session.state.running and not session.state.plan_mode
        assert session.repl.mode_switch.container is session.repl.plan_container
        session.press("1")
        await session.until(lambda: not session.state.running, "the work stopped")
        await session.until(lambda: session.state.plan_mode, "plan mode")

    state = play(scenario, tmp_path, conclave=SLOW)
    assert state.last_result is not None
    assert state.last_result.termination is Termination.CANCELLED


def test_keep_working_leaves_the_run_and_the_mode_alone(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await _confirming(session, SHIFT_TAB)
        session.press(ESC)
        await session.until(lambda: session.state.dialog is Dialog.NONE, "the card closed")
        assert session.state.running and not session.state.plan_mode
        session.press("\x03")

    play(scenario, tmp_path, conclave=SLOW)


def test_mode_plan_while_agents_work_asks_too(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("/mode plan")
        await session.until(lambda: session.state.dialog is Dialog.CONFIRM_MODE, "the card")
        session.press("1")
        await session.until(lambda: session.state.plan_mode, "plan mode")

    play(scenario, tmp_path, conclave=SLOW)


def test_the_card_says_work_in_progress_will_stop() -> None:
    assert STOP_WARNING == "Switch to plan mode? Work in progress will stop."


def test_each_collaboration_modes_chip_has_its_own_style(tmp_path: Path) -> None:
    chips: dict[CollaborationMode, str] = {}

    for mode in (CollaborationMode.PLAN, CollaborationMode.EXECUTE):

        async def scenario(session: Session, mode: CollaborationMode = mode) -> None:
            [chip] = [f for f in session.render(mode_bar) if f[1] == f"[{mode.value}]"]
            chips[mode] = chip[0]

        play(scenario, tmp_path / mode.value, modes=ModeState(collaboration=mode))

    assert chips[CollaborationMode.PLAN] != chips[CollaborationMode.EXECUTE]
    assert "bar.chip.plan" in chips[CollaborationMode.PLAN]
