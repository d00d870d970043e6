"""Each turn's config is the session's, finished for the modes on the bar when the turn is
sent (the one resolver's ``for_modes``): a mode the config cannot run is refused then."""

from __future__ import annotations

from pathlib import Path

from conclave.config.modes import AgentMode, ModeState
from conclave.ui.repl.render import fragments_text
from tests.repl.harness import ALT_A, Session, config, play


def test_a_turn_in_modes_the_config_cannot_run_is_refused_saying_why(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.press(ALT_A)  # single -> multi: 300 agents, each seeing every other
        await session.until(lambda: session.state.modes.agent_mode is AgentMode.MULTI, "multi")
        session.type("Name three uses of a paperclip")
        await session.until(lambda: "cannot run:" in session.transcript(), "the refusal")

    state = play(
        scenario,
        tmp_path,
        conclave=config(300),
        modes=ModeState(agent_mode=AgentMode.SINGLE),
    )

    screen = "".join(fragments_text(block) for block in state.transcript)
    assert "cannot run: orchestrator.visibility: visibility 'all' with 300 agents" in screen
    assert state.usage.runs == 0
