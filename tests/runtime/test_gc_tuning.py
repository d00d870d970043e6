"""The collector's settings for actor systems: a big run raises the gen-0 threshold while it
is open, only in a process whose entry point chose these settings."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from conclave.runtime import gc_tuning
from conclave.runtime.gc_tuning import (
    GEN0_PER_AGENT,
    GEN0_THRESHOLD,
    gc_sized_for_agents,
    tune_gc_for_actors,
)


@pytest.fixture(autouse=True)
def restored_collector() -> Iterator[None]:
    """Each spec starts untuned and leaves the process's collector as it found it."""
    thresholds = gc.get_threshold()
    sizing = gc_tuning._SIZING
    tuned, agents = sizing.tuned, sizing.agents
    sizing.tuned, sizing.agents = False, 0
    try:
        yield
    finally:
        sizing.tuned, sizing.agents = tuned, agents
        gc.set_threshold(*thresholds)


def test_tuning_sets_the_base_threshold() -> None:
    tune_gc_for_actors()
    assert gc.get_threshold()[0] == GEN0_THRESHOLD


def test_a_big_run_raises_the_threshold_while_it_is_open() -> None:
    tune_gc_for_actors()
    agents = 4 * GEN0_THRESHOLD // GEN0_PER_AGENT
    with gc_sized_for_agents(agents):
        assert gc.get_threshold()[0] == GEN0_PER_AGENT * agents
    assert gc.get_threshold()[0] == GEN0_THRESHOLD


def test_a_small_run_keeps_the_base_threshold() -> None:
    tune_gc_for_actors()
    with gc_sized_for_agents(3):
        assert gc.get_threshold()[0] == GEN0_THRESHOLD


def test_runs_open_at_once_add_up_and_each_one_ending_takes_its_agents_back() -> None:
    tune_gc_for_actors()
    big = 2 * GEN0_THRESHOLD // GEN0_PER_AGENT
    with gc_sized_for_agents(big):
        with gc_sized_for_agents(big):
            assert gc.get_threshold()[0] == GEN0_PER_AGENT * 2 * big
        assert gc.get_threshold()[0] == GEN0_PER_AGENT * big


def test_a_run_that_fails_still_takes_its_agents_back() -> None:
    tune_gc_for_actors()
    with pytest.raises(RuntimeError), gc_sized_for_agents(10 * GEN0_THRESHOLD // GEN0_PER_AGENT):
        raise RuntimeError("the run failed")
    assert gc.get_threshold()[0] == GEN0_THRESHOLD


def test_without_tuning_a_run_leaves_the_collector_alone() -> None:
    gc.set_threshold(700, 10, 10)
    with gc_sized_for_agents(100_000):
        assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_threshold_stops_at_the_largest_the_collector_takes() -> None:
    tune_gc_for_actors()
    with gc_sized_for_agents(2**40):
        assert gc.get_threshold()[0] == 2**31 - 1
