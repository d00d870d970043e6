"""The lines live progress and ``conclave replay`` print for events."""

from __future__ import annotations

import pytest

from actors.coordination.events import RunStarted
from runtime import ChildStopped, TapFailed
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


def test_a_child_that_crashes_while_being_stopped_is_shown_with_its_error() -> None:
    event = ChildStopped(
        at=0.0, supervisor="run", child="agent:a1", how="crashed", error="RuntimeError: boom"
    )
    assert describe(event) == "agent:a1 crashed while run stopped it (RuntimeError: boom)"


@pytest.mark.parametrize("how", ["graceful", "killed"])
def test_a_child_stopped_without_a_crash_is_not_a_line(how: str) -> None:
    event = ChildStopped(at=0.0, supervisor="run", child="agent:a1", how=how)
    assert describe(event, verbose=True) is None


def test_a_crash_while_stopping_spanning_lines_is_shown_on_one() -> None:
    event = ChildStopped(
        at=0.0, supervisor="run", child="agent:a1", how="crashed", error="OSError: a\n  b"
    )
    assert describe(event) == "agent:a1 crashed while run stopped it (OSError: a b)"


def test_a_failed_tap_is_shown_on_one_line_with_what_it_raised() -> None:
    event = TapFailed(at=0.0, tap="Recorder", error="ValueError: bad\nthings\x1b[2J")
    assert describe(event) == "event tap Recorder removed: it raised ValueError: bad things\\x1b[2J"
