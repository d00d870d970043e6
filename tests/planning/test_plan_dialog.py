"""The plan approval dialog, driven by keys through a pipe (prompt-toolkit's own way to
test an application) and by clicks on its choices: Approve, Approve with additional
instructions, Revise with feedback, Cancel."""

from __future__ import annotations

import asyncio
import io

import pytest
from prompt_toolkit.application import Application
from prompt_toolkit.data_structures import Point, Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.layout import Float, Layout
from prompt_toolkit.layout.containers import to_container
from prompt_toolkit.mouse_events import MouseButton, MouseEvent, MouseEventType
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.vt100 import Vt100_Output

from conclave.ui.repl.plan_dialog import (
    Approve,
    Cancel,
    Choice,
    PlanDecision,
    PlanDialog,
    Revise,
    ask_plan_decision,
)

PLAN_TEXT = "Goal: tidy\n\nSteps:\n  1. List the pages"
DOWN = "\x1b[B"
UP = "\x1b[A"
ENTER = "\r"
ESC = "\x1b"
CTRL_C = "\x03"


def decide(keys: str) -> PlanDecision:
    """The decision the dialog returns for ``keys`` typed into it."""

    async def main() -> PlanDecision:
        with create_pipe_input() as pipe:
            pipe.send_text(keys)
            return await ask_plan_decision(PLAN_TEXT, input=pipe, output=DummyOutput())

    return asyncio.run(main())


def test_enter_on_the_first_choice_approves() -> None:
    assert decide(ENTER) == Approve(additions="")


def test_approve_with_additional_instructions_takes_the_typed_text() -> None:
    assert decide(DOWN + ENTER + "also add tests" + ENTER) == Approve(additions="also add tests")


def test_revise_with_feedback_takes_the_typed_feedback() -> None:
    assert decide(DOWN + DOWN + ENTER + "fewer steps" + ENTER) == Revise(feedback="fewer steps")


def test_cancel_is_the_fourth_choice() -> None:
    assert decide(DOWN * 3 + ENTER) == Cancel()


@pytest.mark.parametrize(
    "key, expected",
    [("1", Approve()), ("4", Cancel())],
)
def test_a_number_chooses_at_once(key: str, expected: PlanDecision) -> None:
    assert decide(key) == expected


def test_a_number_opens_the_text_field_of_its_choice() -> None:
    assert decide("3" + "split step 2" + ENTER) == Revise(feedback="split step 2")


def test_up_from_the_first_choice_wraps_to_cancel() -> None:
    assert decide(UP + ENTER) == Cancel()


def test_escape_cancels() -> None:
    assert decide(ESC) == Cancel()


def test_ctrl_c_cancels() -> None:
    assert decide(CTRL_C) == Cancel()


def test_empty_feedback_keeps_the_field_open() -> None:
    assert decide("3" + ENTER + "now some" + ENTER) == Revise(feedback="now some")


def test_escape_in_a_text_field_goes_back_to_the_choices() -> None:
    assert decide("2" + "never mind" + ESC + DOWN + DOWN + ENTER) == Cancel()


def test_blank_additions_approve_without_additions() -> None:
    assert decide("2" + "   " + ENTER) == Approve(additions="")


def _click(dialog: PlanDialog, choice: Choice) -> None:
    fragments = dialog._choice_fragments()
    handler = next(f[2] for f in fragments if choice.value in f[1] and len(f) == 3)
    handler(
        MouseEvent(
            position=Point(x=0, y=0),
            event_type=MouseEventType.MOUSE_UP,
            button=MouseButton.LEFT,
            modifiers=frozenset(),
        )
    )


def test_a_click_on_approve_approves() -> None:
    dialog = PlanDialog(PLAN_TEXT)

    _click(dialog, Choice.APPROVE)

    assert dialog.decision == Approve()


def test_a_click_on_cancel_cancels() -> None:
    dialog = PlanDialog(PLAN_TEXT)

    _click(dialog, Choice.CANCEL)

    assert dialog.decision == Cancel()


def test_a_click_on_revise_opens_its_text_field() -> None:
    dialog = PlanDialog(PLAN_TEXT)

    _click(dialog, Choice.REVISE)

    assert dialog.editing is Choice.REVISE
    assert dialog.decision is None


def test_the_result_is_awaited_and_delivered_to_callbacks() -> None:
    dialog = PlanDialog(PLAN_TEXT)
    seen: list[PlanDecision] = []
    dialog.on_decided.append(seen.append)

    async def main() -> PlanDecision:
        waiting = asyncio.ensure_future(dialog.result())
        await asyncio.sleep(0)
        dialog.choose(Choice.CANCEL)
        return await waiting

    assert asyncio.run(main()) == Cancel()
    assert seen == [Cancel()]


def test_only_the_first_decision_counts() -> None:
    dialog = PlanDialog(PLAN_TEXT)

    dialog.choose(Choice.APPROVE)
    dialog.choose(Choice.CANCEL)

    assert dialog.decision == Approve()


def test_the_dialog_shows_the_plan_and_the_four_choices() -> None:
    screen = io.StringIO()

    async def main() -> None:
        with create_pipe_input() as pipe:
            pipe.send_text("4")
            output = Vt100_Output(screen, lambda: Size(rows=40, columns=100), term="xterm")
            await ask_plan_decision(PLAN_TEXT, input=pipe, output=output)

    asyncio.run(main())

    shown = screen.getvalue()
    for text in ("Proposed plan", "Goal: tidy", "1. List the pages"):
        assert text in shown
    for choice in Choice:
        assert choice.value in shown


def test_the_dialog_floats_its_container() -> None:
    dialog = PlanDialog(PLAN_TEXT)

    float_ = dialog.float()

    assert isinstance(float_, Float)
    assert float_.content is to_container(dialog.container)


PAGE_DOWN = "\x1b[6~"
PAGE_UP = "\x1b[5~"


def _scrolled(keys: str) -> int:
    dialog = PlanDialog("\n".join(f"line {n}" for n in range(25)))

    async def main() -> None:
        with create_pipe_input() as pipe:
            pipe.send_text(keys + "4")
            app: Application[None] = Application(
                layout=Layout(dialog.container, focused_element=dialog.focus),
                input=pipe,
                output=DummyOutput(),
            )
            dialog.on_decided.append(lambda decision: app.exit())
            await app.run_async()

    asyncio.run(main())
    return dialog.scroll


def test_page_down_scrolls_a_long_plan() -> None:
    assert _scrolled(PAGE_DOWN) == 10


def test_page_down_stops_at_the_plans_last_line() -> None:
    assert _scrolled(PAGE_DOWN * 5) == 24


def test_page_up_scrolls_back_to_the_top() -> None:
    assert _scrolled(PAGE_DOWN + PAGE_UP + PAGE_UP) == 0
