"""The notice under the input: one said while a run worked is about that run and goes when
the run ends; one said since stays until the next key."""

from __future__ import annotations

from pathlib import Path

import attrs

from conclave.config.schema import ConclaveConfig, LoopKind
from conclave.ui.repl.state import BUSY, ReplState
from tests.repl.harness import Session, config, play


def _paor(latency: float) -> ConclaveConfig:
    base = config(1, latency=latency)
    return attrs.evolve(
        base, agents=tuple(attrs.evolve(a, loop=LoopKind.PAOR) for a in base.agents)
    )


def test_a_correction_sent_notice_goes_when_the_run_ends(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        before = session.state.usage.runs
        session.type("a slow task")
        await session.until(lambda: session.state.running, "the run")
        session.type("/correct search only in src/utils")
        await session.until(lambda: "correction sent" in session.state.notice, "the notice")
        await session.finish(before, "a slow task")
        await session.until(lambda: not session.state.running, "the run's end")
        await session.until(lambda: session.state.notice == "", "the notice gone")

    play(scenario, tmp_path, conclave=_paor(latency=0.3))


def test_a_refusal_said_while_a_run_worked_goes_when_it_stops() -> None:
    state = ReplState(agents=("a",), running=True)
    state.tell(BUSY)
    state.running = False
    state.run_stopped()
    assert state.notice == ""


def test_a_notice_said_after_the_run_stays_when_it_stops() -> None:
    state = ReplState(agents=("a",))
    state.tell("the run ended before the decision reached it")
    state.run_stopped()
    assert state.notice == "the run ended before the decision reached it"
