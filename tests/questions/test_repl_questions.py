"""Questions in the REPL: an agent's question opens its card in the input's place, the run's
timer stops meanwhile, and the chosen answer goes back to the agent, which continues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conclave.actors.agent.transcript_log import read_transcripts
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig
from conclave.ui.repl.state import Dialog
from tests.questions.helpers import CRITICAL, MINOR, asks
from tests.repl.harness import CTRL_C, ESC, Session, play


def _asking(*questions: dict[str, Any]) -> ConclaveConfig:
    backend = ScriptedBackendConfig(seed=1, tool_steps=asks(*questions))
    return ConclaveConfig(
        agents=(AgentConfig(id="solo", backend=backend),),
        orchestrator=OrchestratorConfig(quiet_period=None),
    )


def _tool_results(session: Session) -> list[str]:
    [log] = list(session.log_root.glob("*/transcripts.jsonl"))
    return [line["content"] for line in read_transcripts(log) if line["role"] == "tool"]


def test_a_critical_question_is_answered_on_its_card_and_the_agent_continues(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("Tidy the repository")
        await session.until(lambda: session.state.dialog is Dialog.QUESTION, "the card")
        card = session.repl.questions.card if session.repl.questions else None
        assert card is not None and card.title == "CRITICAL question from solo"
        session.press("2")  # Delete them
        await session.finish(before, "the run")
        assert session.state.dialog is Dialog.NONE
        assert _tool_results(session) == ["The user answered: delete"]
        assert "you answered solo: delete" in session.transcript()
        assert session.state.last_result is not None
        assert session.state.last_result.final_answer

    play(scenario, tmp_path, conclave=_asking(CRITICAL))


def test_questions_come_one_card_at_a_time_and_esc_takes_the_default(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("Tidy the repository")
        await session.until(lambda: session.state.dialog is Dialog.QUESTION, "the first card")
        session.press("1")  # Keep them
        await session.until(
            lambda: (
                session.repl.questions is not None
                and session.repl.questions.card is not None
                and session.repl.questions.card.question.question == MINOR["question"]
            ),
            "the second card",
        )
        session.press(ESC)
        await session.finish(before, "the run")
        assert _tool_results(session) == [
            "The user answered: keep",
            "The user answered: spaces",
        ]

    play(scenario, tmp_path, conclave=_asking(CRITICAL, MINOR))


def test_ctrl_c_on_a_card_ends_the_run_and_closes_the_card(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("Tidy the repository")
        await session.until(lambda: session.state.dialog is Dialog.QUESTION, "the card")
        session.press(CTRL_C)
        await session.until(lambda: session.state.usage.runs > before, "the run's end")
        assert session.state.dialog is Dialog.NONE
        assert session.state.last_result is not None
        assert session.state.last_result.termination == "cancelled"

    play(scenario, tmp_path, conclave=_asking(CRITICAL))
