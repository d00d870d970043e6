"""Tool approval in the REPL: a delete that asks opens the card; denied with feedback, the
agent reads the feedback and goes on; allowed for the session, the same tool asks no more."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conclave.actors.events.loop import ToolCallFinished
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig, ToolStep
from conclave.config.schema.permissions import PermissionMode, PermissionsConfig
from conclave.runtime import read_event_log
from conclave.ui.repl.approval_card import ToolApprovalCard
from conclave.ui.repl.state import Dialog
from conclave.ui.repl.tool_approvals import ReplToolApprover
from tests.repl.harness import ENTER, Session, play

FILES = ("a.txt", "b.txt")
DOWN = "\x1b[B"


def _config() -> ConclaveConfig:
    """One agent writes two files and deletes them; file writes proceed, deletes ask."""
    steps = [ToolStep(tool="write_file", arguments={"path": p, "content": "x"}) for p in FILES]
    steps += [ToolStep(tool="delete_file", arguments={"path": p}) for p in FILES]
    agent = AgentConfig(id="agent-1", backend=ScriptedBackendConfig(tool_steps=tuple(steps)))
    return ConclaveConfig(
        agents=(agent,),
        orchestrator=OrchestratorConfig(quiet_period=None, tools=True),
        permissions=PermissionsConfig(mode=PermissionMode.ACCEPT_EDITS),
    )


def _deletes(log_root: Path) -> list[ToolCallFinished]:
    [run] = log_root.glob("*")
    return _deletes_in(run)


def _deletes_in(run: Path) -> list[ToolCallFinished]:
    finished = read_event_log(run / "events.jsonl").events
    return [e for e in finished if isinstance(e, ToolCallFinished) and e.tool == "delete_file"]


def _replaced(approvals: ReplToolApprover, card: ToolApprovalCard | None) -> Callable[[], bool]:
    return lambda: approvals.card is not card


async def _card(session: Session) -> None:
    await session.until(lambda: session.state.dialog is Dialog.TOOL_APPROVAL, "the card")


def test_a_delete_denied_with_feedback_is_not_done_and_the_agent_goes_on(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("Tidy up")
        approvals = session.repl.tool_approvals
        assert approvals is not None
        for _ in FILES:
            await _card(session)
            card = approvals.card
            session.press("3", "keep it", ENTER)
            # The next delete's card may open before a redraw: wait for this one to go.
            await session.until(_replaced(approvals, card), "deny")
        await session.finish(before, "Tidy up")

    play(scenario, tmp_path, conclave=_config())
    deletes = _deletes(tmp_path / "runs")
    assert [d.refused for d in deletes] == [True, True]
    assert all(
        d.error == "the call to delete_file was refused: the user denied it: keep it"
        for d in deletes
    )


def test_allowed_for_the_session_the_second_delete_asks_no_more(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("Tidy up")
        await _card(session)
        session.press(DOWN, ENTER)
        await session.finish(before, "Tidy up")

    play(scenario, tmp_path, conclave=_config())
    assert [d.ok for d in _deletes(tmp_path / "runs")] == [True, True]


def test_what_was_allowed_for_the_session_holds_in_the_next_run(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("Tidy up")
        await _card(session)
        session.press(DOWN, ENTER)
        await session.finish(before, "Tidy up")
        await session.result_of("Tidy up again")  # would wait on a card, and time out

    play(scenario, tmp_path, conclave=_config())
    deletes = [d for log in (tmp_path / "runs").glob("*") for d in _deletes_in(log)]
    assert len(deletes) == 4 and all(d.ok for d in deletes)
