"""The REPL's permission mode: the status line shows it when it is not the default
(``bypass``), and ``/permissions`` shows it or sets the next runs'."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.events.loop import ToolCallFinished
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig, ToolStep
from conclave.config.schema.permissions import PermissionMode, PermissionsConfig
from conclave.runtime import read_event_log
from conclave.ui.repl.layout import status_line
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import BUSY, Dialog, ReplState
from tests.repl.harness import Session, config, play


def _deleting(mode: PermissionMode) -> ConclaveConfig:
    """One agent that deletes a file: the delete asks in ``ask`` mode, not in ``bypass``."""
    steps = (ToolStep(tool="delete_file", arguments={"path": "a.txt"}),)
    agent = AgentConfig(id="agent-1", backend=ScriptedBackendConfig(tool_steps=steps))
    return ConclaveConfig(
        agents=(agent,),
        orchestrator=OrchestratorConfig(quiet_period=None, tools=True),
        permissions=PermissionsConfig(mode=mode),
    )


def _line(mode: PermissionMode) -> str:
    state = ReplState(agents=("a",), models={"a": "gpt-4o"}, permission_mode=mode)
    return fragments_text(status_line(state))


def test_the_status_line_shows_a_permission_mode_that_asks() -> None:
    assert _line(PermissionMode.ASK).endswith(" · permissions ask")


def test_the_status_line_leaves_out_the_default_permission_mode() -> None:
    assert "permissions" not in _line(PermissionMode.BYPASS)


def test_the_repl_starts_in_the_configs_permission_mode(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        pass

    state = play(scenario, tmp_path, conclave=_deleting(PermissionMode.ACCEPT_EDITS))
    assert state.permission_mode is PermissionMode.ACCEPT_EDITS


def test_permissions_alone_says_the_mode_and_the_choices(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/permissions")
        await session.until(lambda: "permission mode:" in session.transcript(), "the mode")
        assert "permission mode: bypass (/permissions MODE: ask, accept-edits, bypass)" in (
            session.transcript()
        )

    play(scenario, tmp_path)


def test_permissions_with_an_unknown_mode_names_the_valid_ones(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/permissions sometimes")
        await session.until(lambda: "invalid" in session.transcript(), "the error")
        assert 'invalid permission mode "sometimes". Valid modes: ask, accept-edits, bypass' in (
            session.transcript()
        )

    state = play(scenario, tmp_path)
    assert state.permission_mode is PermissionMode.BYPASS


def test_permissions_with_a_mode_makes_the_next_runs_ask_in_it(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/permissions ask")
        await session.until(lambda: session.state.permission_mode is PermissionMode.ASK, "ask")
        before = session.state.usage.runs
        session.type("Tidy up")
        await session.until(lambda: session.state.dialog is Dialog.TOOL_APPROVAL, "the card")
        session.press("3", "\r")  # deny, without feedback
        await session.finish(before, "Tidy up")

    play(scenario, tmp_path, conclave=_deleting(PermissionMode.BYPASS))
    [run] = (tmp_path / "runs").glob("*")
    events = read_event_log(run / "events.jsonl").events
    deletes = [e for e in events if isinstance(e, ToolCallFinished) and e.tool == "delete_file"]
    assert [d.refused for d in deletes] == [True]


def test_permissions_with_a_mode_is_refused_while_agents_work(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("/permissions ask")
        await session.until(lambda: session.state.notice == BUSY, "the refusal")
        session.press("\x03")

    state = play(scenario, tmp_path, conclave=config(latency=0.5))
    assert state.permission_mode is PermissionMode.BYPASS
