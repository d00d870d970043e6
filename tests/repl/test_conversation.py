"""The conversation: one history for the session, whichever agent is active."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.llm.protocol import CompletionRequest
from conclave.config.modes import AgentMode, ModeState
from tests.repl.backends import recording
from tests.repl.harness import ALT_RIGHT, Session, play


def test_the_agent_made_active_sees_every_earlier_turn(tmp_path: Path) -> None:
    requests: dict[str, list[CompletionRequest]] = {}

    async def scenario(session: Session) -> None:
        first = await session.result_of("What is a paperclip for?")
        assert first.winner == "agent-1"
        session.press(ALT_RIGHT)
        await session.until(lambda: session.state.active_agent == "agent-2", "agent-2's tab")
        await session.result_of("And a stapler?")
        assert first.final_answer is not None
        shown = requests["agent-2"][0].messages  # agent-2's first call of the session
        assert any("What is a paperclip for?" in m.content for m in shown if m.role == "user")
        assert any(first.final_answer in m.content for m in shown if m.role == "assistant")

    play(
        scenario,
        tmp_path,
        modes=ModeState(agent_mode=AgentMode.SINGLE),
        backend_factory=recording(requests),
    )


def test_each_finished_turn_joins_the_history_with_its_winner_and_run(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        result = await session.result_of("What is a paperclip for?")
        turn = session.state.history[-1]
        assert turn.task == "What is a paperclip for?"
        assert turn.final_answer == result.final_answer
        assert turn.winner == result.winner
        assert result.log_dir is not None
        assert turn.run_id == Path(result.log_dir).name

    play(scenario, tmp_path)
