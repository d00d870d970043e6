"""The cache benchmark's own machinery, and the layout it measures: most of a panel's prompt
tokens can come from a provider's cache."""

from __future__ import annotations

from conclave.benchmarks.cache_bench import format_table, run_benchmark


def test_a_three_agent_panel_has_most_of_its_prompt_tokens_read_from_the_cache() -> None:
    report = run_benchmark([3], repeats=1)

    [row] = report["rows"]
    assert row["completed"]
    assert row["server_agrees"]  # the run's usage says what the server counted
    assert row["cached_share"] >= 0.5  # measured 56 %; 0 % before the layout put shared text first


def test_the_table_has_a_row_per_panel_and_says_the_share() -> None:
    report = run_benchmark([2], repeats=1)

    table = format_table(report)

    assert "cache_bench" in table.splitlines()[0]
    assert table.splitlines()[-1].split()[0] == "2"
    assert "%" in table.splitlines()[-1]
