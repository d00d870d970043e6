"""The lines live progress and ``conclave replay`` print for events."""

from __future__ import annotations

from actors.coordination.events import RunStarted
from ui.timeline import describe


def started(agents: int) -> RunStarted:
    ids = tuple(f"a{i}" for i in range(agents))
    return RunStarted(at=0.0, task="t", agents=ids, anonymous_ids=ids, strategy="synthesize")


def test_a_small_run_names_every_agent() -> None:
    assert describe(started(3)) == "run started: 3 agents (a0, a1, a2), strategy synthesize"


def test_a_big_run_names_five_agents_and_counts_the_rest() -> None:
    line = describe(started(50_000))
    assert line == (
        "run started: 50,000 agents (a0, a1, a2, a3, a4 and 49,995 more), strategy synthesize"
    )
