"""The short chaos batch (the long one: ``python -m tests.chaos --runs 3000``): random
configs, actors crashing at random moments, taps raising, a disk filling under the event
log. No run may hang, lose an answer, end twice, or pick a winner its votes do not make."""

from __future__ import annotations

from tests.chaos.harness import Tally, run_scenario, scenario

RUNS = 150


async def test_random_runs_with_random_crashes_keep_every_promise(autojump_clock: object) -> None:
    tally = Tally()
    for seed in range(RUNS):
        tally.add(await run_scenario(scenario(seed)))

    assert not tally.failures, tally.report()
    # The batch really was chaotic: crashes, restarts, broken taps and full disks happened.
    assert sum(tally.crashes.values()) > RUNS / 2
    assert tally.restarts > RUNS / 2
    assert tally.tap_failures > 10
    assert tally.log_failures > 10
