"""Corrections in the REPL: ``/correct [@ID] TEXT``, or a plain line typed while a run with
PAOR agents works (a run without them queues it as the next turn, as before)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from conclave.config.schema import ConclaveConfig, LoopKind
from tests.repl.harness import ENTER, Session, config, play


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


def test_a_line_typed_while_a_paor_run_works_is_a_correction_for_its_agents(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("search only in src/utils")
        await session.until(lambda: "correction sent" in session.state.notice, "the notice")
        assert session.state.notice == (
            "correction sent to agent-1 (PAOR): taken at the next step, not queued as a turn"
        )
        assert session.state.queued == []
        await session.finish(0, "a slow task")
        [log] = list(session.log_root.rglob("events.jsonl"))
        events = [json.loads(line) for line in log.read_text().splitlines()]
        [applied] = [e for e in events if e.get("kind") == "correction_applied"]
        assert applied["correction"] == "search only in src/utils"

    play(scenario, tmp_path, conclave=_paor(latency=0.5))


def test_a_line_typed_while_a_run_without_paor_agents_works_is_queued_as_the_next_turn(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("and then this")
        await session.until(lambda: session.state.queued, "the queued turn")
        assert session.state.queued == ["and then this"]
        assert "correction" not in session.state.notice
        session.press("\x03")

    play(scenario, tmp_path, conclave=config(1, latency=2.0))


def test_a_line_typed_at_the_vote_prompt_is_queued_as_the_next_turn_saying_why(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> None:
        session.type("a task")
        await session.until(lambda: session.state.override is not None, "the vote's end")
        session.type("use ripgrep")
        await session.until(lambda: "no PAOR round is left" in session.state.notice, "the note")
        assert session.state.notice == (
            "no PAOR round is left in this run (voting is over): the line is queued as the "
            "next turn, not sent as a correction"
        )
        assert session.state.queued == ["use ripgrep"]
        session.press(ENTER)
        await session.finish(1, "the queued turn")
        assert "correction not used" not in session.transcript()
        assert "> use ripgrep" in session.transcript()
        assert session.state.usage.runs == 2

    play(scenario, tmp_path, conclave=_paor(latency=0.1))


def test_correct_at_the_vote_prompt_is_refused_with_the_reason(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("a task")
        await session.until(lambda: session.state.override is not None, "the vote's end")
        session.type("/correct use ripgrep")
        await session.until(lambda: "no PAOR round is left" in session.state.notice, "the note")
        assert session.state.notice.endswith("so it was not sent")
        assert session.state.queued == []
        session.press(ENTER)

    play(scenario, tmp_path, conclave=_paor(latency=0.1))
