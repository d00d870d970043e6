"""The events benchmark's own machinery: it measures what it says it measures."""

from __future__ import annotations

from conclave.benchmarks.events_bench import SETUPS, format_table, run_benchmark


def test_the_benchmark_compares_the_three_setups_and_drops_the_stuck_subscriber() -> None:
    report = run_benchmark(agents=20, repeats=1, buffer=8)

    rows = {row["setup"]: row for row in report["rows"]}
    assert list(rows) == list(SETUPS)
    assert all(row["all_completed"] for row in rows.values())
    assert rows["no hub"]["events"] is None
    assert rows["hub, no subscriber"]["delivered"] == 0
    assert rows["hub, 1 stuck subscriber"]["delivered"] == 8
    assert rows["hub, 1 stuck subscriber"]["dropped"] == 1
    assert report["stuck_vs_unwatched"] > 0


def test_the_table_states_the_verdict() -> None:
    report = run_benchmark(agents=5, repeats=1, buffer=4)

    table = format_table(report)

    assert "stuck subscriber / no subscriber" in table
    assert table.splitlines()[-1].endswith(("met", "NOT met"))
