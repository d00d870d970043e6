"""How a PAOR round counts its iterations in words: one iteration, two iterations."""

from __future__ import annotations

from conclave.actors.paor.events import PaorFinished
from conclave.actors.paor.reflect import Reflection
from conclave.actors.paor.report import PaorEnd, PaorOutcome
from conclave.ui.timeline import describe


def _finished(iterations: int) -> PaorFinished:
    return PaorFinished(
        at=0.0,
        agent="w1",
        end=PaorEnd.GOAL_ACHIEVED,
        iterations=iterations,
        summary="Done: renamed",
        detail="",
    )


def test_the_timeline_says_one_iteration_in_the_singular() -> None:
    assert describe(_finished(1)) == "w1 paor goal_achieved after 1 iteration: Done: renamed"


def test_the_timeline_says_several_iterations_in_the_plural() -> None:
    assert describe(_finished(2)) == "w1 paor goal_achieved after 2 iterations: Done: renamed"


def test_a_round_stopped_at_one_iteration_says_so_in_the_singular() -> None:
    outcome = PaorOutcome(
        end=PaorEnd.MAX_ITERATIONS,
        iterations=1,
        reflections=(Reflection(goal_achieved=False, progress="searched"),),
    )
    assert outcome.summary().splitlines()[0] == "Stopped after 1 iteration (the limit): searched"
