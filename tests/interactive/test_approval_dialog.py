"""The run approval dialog, driven by keys through a pipe: Approve, Edit the task then
Approve, Cancel (by choice, Esc or Ctrl+C), and what it shows."""

from __future__ import annotations

import asyncio

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conclave.actors.human.run_approval import Approved, RunApprovalRequest, RunDecision, RunRefused
from conclave.config.modes import AgentMode
from conclave.ui.repl.approval_dialog import CANCELLED, ask_run_approval, describe_run

REQUEST = RunApprovalRequest(
    task="Write the note",
    context="It is for the ops team",
    agents=("a", "b"),
    agent_mode=AgentMode.MULTI,
    refinement=True,
)
DOWN = "\x1b[B"
UP = "\x1b[A"
ENTER = "\r"
ESC = "\x1b"
CTRL_C = "\x03"
CTRL_U = "\x15"


def decide(keys: str, request: RunApprovalRequest = REQUEST) -> RunDecision:
    async def main() -> RunDecision:
        with create_pipe_input() as pipe:
            pipe.send_text(keys)
            return await ask_run_approval(request, input=pipe, output=DummyOutput())

    return asyncio.run(main())


def test_enter_on_the_first_choice_approves_the_run_as_asked() -> None:
    assert decide(ENTER) == Approved(task="Write the note", context="It is for the ops team")


def test_edit_then_approve_runs_the_edited_task() -> None:
    keys = "2" + CTRL_U + "Write the note in French" + ENTER + "1"
    assert decide(keys) == Approved(
        task="Write the note in French", context="It is for the ops team"
    )


def test_edit_starts_from_the_task_as_asked() -> None:
    assert decide("2" + " today" + ENTER + ENTER) == Approved(
        task="Write the note today", context="It is for the ops team"
    )


def test_an_empty_edit_is_refused_and_esc_keeps_the_old_task() -> None:
    # Esc then Up: an escape sequence after Esc makes it read alone (not as Alt+key).
    assert decide("2" + CTRL_U + ENTER + ESC + UP + ENTER) == Approved(
        task="Write the note", context="It is for the ops team"
    )


def test_cancel_refuses_the_run_saying_the_person_cancelled_it() -> None:
    assert decide(DOWN + DOWN + ENTER) == RunRefused(reason=CANCELLED)


def test_esc_and_ctrl_c_cancel() -> None:
    assert decide(ESC) == RunRefused(reason=CANCELLED)
    assert decide(CTRL_C) == RunRefused(reason=CANCELLED)


def test_the_dialog_shows_task_context_agents_and_what_the_run_does() -> None:
    planned = RunApprovalRequest(
        task="t",
        context="",
        agents=("a",),
        agent_mode=AgentMode.SINGLE,
        refinement=False,
        planning_mode=True,
        execute_after_planning=True,
    )
    assert describe_run(planned, "t") == (
        "Task: t\nContext: (none)\nAgents: a (single, refinement off, plan, then execute the plan)"
    )
