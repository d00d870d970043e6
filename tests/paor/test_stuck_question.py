"""A PAOR agent stuck after its forced new plan asks the user for another approach, and that
is what the user reads: on the REPL's question card, and on a headless run's stderr when it
pauses (the scripted backend's ``paor_stuck``: its first two reflections say it is stuck)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
import yaml

from conclave.config.schema import ConclaveConfig, LoopKind, ScriptedBackendConfig
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import Dialog
from tests.repl.harness import ENTER, Session, config, play

ASKS = "What other approach should I take?"


def _stuck_repl() -> ConclaveConfig:
    base = config(1, latency=0.05)
    backend = ScriptedBackendConfig(latency=0.05, paor_stuck=2)
    return attrs.evolve(
        base,
        agents=tuple(attrs.evolve(a, loop=LoopKind.PAOR, backend=backend) for a in base.agents),
    )


def test_the_repl_card_of_a_stuck_agent_asks_for_another_approach(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("rename old_total")
        await session.until(lambda: session.state.dialog is Dialog.QUESTION, "the card")
        card = session.repl.questions.card if session.repl.questions else None
        assert card is not None
        shown = fragments_text(card._details())
        assert shown.startswith("I am stuck and a new plan did not help.")
        assert ASKS in shown
        session.press("1", "grep for it instead", ENTER)  # "Other…": a free answer
        await session.finish(before, "the run")
        assert "you answered agent-1: grep for it instead" in session.transcript()

    play(scenario, tmp_path, conclave=_stuck_repl())


def test_a_paused_headless_run_says_the_stuck_agent_asks_for_another_approach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "stuck.yaml"
    backend = {"type": "scripted", "latency": 0, "paor_stuck": 2}
    cfg.write_text(
        yaml.safe_dump(
            {
                "agents": [{"id": "p", "loop": "paor", "backend": backend}],
                "orchestrator": {"quiet_period": None},
            }
        )
    )
    code = main(
        ["run", "--config", str(cfg), "--on-question", "pause", "--output-format", "json", "x"]
    )
    captured = capsys.readouterr()
    assert code == ExitCode.PAUSED
    pending = json.loads(captured.out)["pending_question"]
    assert pending["question"]["question"].endswith(ASKS)
    assert "p asks (major): I am stuck and a new plan did not help." in captured.err
    assert ASKS in captured.err
