"""The floor of a big ring run (benchmarks/floor.py), and how ``conclave bench`` shows it."""

from __future__ import annotations

import pytest
import trio

from conclave.benchmarks import floor, load_bench


async def test_every_agent_answers_votes_and_stops_in_eleven_hops_and_one_presents(
    autojump_clock: object,
) -> None:
    run = floor.FloorRun(agents=7, latency=0.2, quiet=0.1)

    await run.run()

    assert run.hops == 7 * 11 + 2


async def test_a_run_waits_its_calls_and_one_quiet_period(autojump_clock: object) -> None:
    answer, vote, present = floor._delays(0, 0.2)
    started = trio.current_time()

    await floor.FloorRun(agents=1, latency=0.2, quiet=0.1).run()

    assert trio.current_time() - started == pytest.approx(answer + 0.1 + vote + present)


async def test_without_a_quiet_period_the_run_ends_each_answer_its_own_burst(
    autojump_clock: object,
) -> None:
    run = floor.FloorRun(agents=5, latency=0.2, quiet=0.0)

    with trio.fail_after(10):
        await run.run()

    assert run.hops > 5 * 11 + 2  # neighbours get an update per answer, not one per burst


def test_the_delays_jitter_around_the_latency_by_half_at_most() -> None:
    drawn = [d for agent in range(200) for d in floor._delays(agent, 0.2)]

    assert all(0.1 <= d <= 0.3 for d in drawn)
    assert len(set(drawn)) == len(drawn)


def test_the_floor_row_gives_its_ratio_to_its_own_ideal_and_its_cpu_per_agent() -> None:
    row = floor.measure_floor(agents=20, latency=0.01, quiet=0.01, repeats=1)

    assert row["ideal_s"] >= 0.02
    assert row["wall_over_ideal"] == round(row["wall_s"] / row["ideal_s"], 2)
    assert row["cpu_us_per_agent"] == round(row["cpu_s"] / 20 * 1e6, 1)
    assert row["hops_per_agent"] == 11.1  # and the presentation's two


def test_the_floor_is_measured_for_the_targeted_cases_with_refinement_on() -> None:
    cases = load_bench.big_run_cases(quick=False)

    picked = {(c.agents, c.latency, c.visibility) for c in load_bench.floor_cases(cases, False)}

    assert picked == set(load_bench.BIG_TARGETS)
    assert all(c.refinement for c in load_bench.floor_cases(cases, False))


def test_a_quick_run_measures_the_floor_of_its_largest_ring_case_with_latency() -> None:
    cases = load_bench.big_run_cases(quick=True)

    [picked] = load_bench.floor_cases(cases, True)

    assert (picked.agents, picked.latency, picked.visibility) == (100, 0.2, "ring")


def test_a_floor_row_shows_the_run_s_cpu_per_agent_beside_its_own() -> None:
    big = [
        {"agents": 1000, "latency": 0.2, "visibility": "ring", "refinement": False,
         "cpu_s": 9.0, "wall_over_ideal": 9.9},
        {"agents": 1000, "latency": 0.2, "visibility": "ring", "refinement": True,
         "cpu_s": 2.0, "wall_over_ideal": 2.5},
    ]  # fmt: skip
    row = {"agents": 1000, "latency": 0.2, "cpu_us_per_agent": 250.0}

    joined = load_bench.with_runtime_cpu(row, big)

    assert joined["run_cpu_us_per_agent"] == 2000.0
    assert joined["run_over_floor_cpu"] == 8.0
    assert joined["run_wall_over_ideal"] == 2.5
