"""What the run's stats tap makes of PAOR's end of round (counted by its kind, so that a run
without PAOR does not load PAOR's events)."""

from __future__ import annotations

from conclave.actors.paor.events import PaorFinished
from conclave.actors.paor.report import PaorEnd
from conclave.actors.run.result import RunStats


def _finished(agent: str, end: PaorEnd) -> PaorFinished:
    return PaorFinished(at=0.0, agent=agent, end=end, iterations=3, summary="s", detail="")


def test_a_paor_round_that_ran_out_of_iterations_or_budget_leaves_its_agent_limited() -> None:
    stats = RunStats()

    stats.record(_finished("a", PaorEnd.MAX_ITERATIONS))
    stats.record(_finished("b", PaorEnd.BUDGET_SPENT))

    assert stats.paor_limited == {"a", "b"}


def test_a_later_paor_round_that_reaches_its_goal_lifts_its_agent_limit() -> None:
    stats = RunStats()
    stats.record(_finished("a", PaorEnd.MAX_ITERATIONS))

    stats.record(_finished("a", PaorEnd.GOAL_ACHIEVED))

    assert stats.paor_limited == set()
