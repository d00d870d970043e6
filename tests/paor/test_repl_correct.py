"""The REPL's ``/correct [@ID] TEXT``: a correction for the running run's PAOR agents."""

from __future__ import annotations

from pathlib import Path

import attrs

from conclave.config.schema import ConclaveConfig, LoopKind
from tests.repl.harness import Session, config, play


def _paor(latency: float) -> ConclaveConfig:
    base = config(1, latency=latency)
    return attrs.evolve(
        base, agents=tuple(attrs.evolve(a, loop=LoopKind.PAOR) for a in base.agents)
    )


def test_correct_while_a_paor_run_goes_reaches_its_agent(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("/correct @agent-1 search only in src/utils")
        await session.until(lambda: "correction sent" in session.state.notice, "the notice")
        assert session.state.notice == (
            "correction sent to agent-1; PAOR agents take it at their next step"
        )
        session.press("\x03")

    play(scenario, tmp_path, conclave=_paor(latency=2.0))


def test_correct_for_an_unknown_agent_names_the_runs_agents(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("/correct @nobody x")
        await session.until(lambda: "no agent" in session.state.notice, "the refusal")
        assert session.state.notice == "no agent 'nobody' in this run; its agents are: agent-1"
        session.press("\x03")

    play(scenario, tmp_path, conclave=_paor(latency=2.0))


def test_correct_without_a_run_says_there_is_none(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/correct use ripgrep")
        await session.until(lambda: "no run is going" in session.state.notice, "the notice")

    play(scenario, tmp_path)


def test_correct_without_text_shows_its_usage(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("/correct @agent-1")
        await session.until(lambda: "usage: /correct" in session.transcript(), "the usage")

    play(scenario, tmp_path)
