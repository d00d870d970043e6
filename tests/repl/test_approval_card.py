"""The tool approval card, driven by keys through a pipe: Allow once, Allow for this
session, Deny with feedback (typed, or none by Esc or Ctrl+C), and what it shows."""

from __future__ import annotations

import asyncio

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conclave.actors.human.tool_approval import (
    AllowForSession,
    AllowOnce,
    Deny,
    ToolApprovalRequest,
    ToolDecision,
)
from conclave.ui.repl.approval_card import ask_tool_approval, describe_call

REQUEST = ToolApprovalRequest(
    agent="agent1",
    tool="delete_file",
    arguments='{"path": "notes.txt"}',
    subject="notes.txt",
    reason="delete_file deletes notes.txt (permission mode ask)",
)
DOWN = "\x1b[B"
ENTER = "\r"
ESC = "\x1b"
CTRL_C = "\x03"


def decide(keys: str) -> ToolDecision:
    async def main() -> ToolDecision:
        with create_pipe_input() as pipe:
            pipe.send_text(keys)
            return await ask_tool_approval(REQUEST, input=pipe, output=DummyOutput())

    return asyncio.run(main())


def test_enter_on_the_first_choice_allows_the_call_once() -> None:
    assert decide(ENTER) == AllowOnce()


def test_the_second_choice_allows_it_for_the_session() -> None:
    assert decide(DOWN + ENTER) == AllowForSession()


def test_j_and_k_move_down_and_up_as_the_arrows_do() -> None:
    assert decide("jjk" + ENTER) == AllowForSession()


def test_deny_takes_the_feedback_typed_for_the_agent() -> None:
    assert decide("3" + "archive it instead" + ENTER) == Deny(feedback="archive it instead")


def test_esc_and_ctrl_c_deny_without_feedback() -> None:
    assert decide(ESC) == Deny()
    assert decide(CTRL_C) == Deny()


def test_the_card_shows_the_call_and_why_it_asks() -> None:
    assert describe_call(REQUEST).splitlines() == [
        "agent1 wants to call delete_file",
        "Why it asks: delete_file deletes notes.txt (permission mode ask)",
        "Touches: notes.txt",
        'Arguments: {"path": "notes.txt"}',
    ]


def test_long_arguments_are_cut_with_their_length() -> None:
    long = ToolApprovalRequest(
        agent="a", tool="write_file", arguments="x" * 1000, subject=None, reason="r"
    )
    [*_, arguments] = describe_call(long).splitlines()
    assert arguments.endswith("… (1,000 characters)")
