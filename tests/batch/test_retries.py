"""``--retries``: a failed run is run again before it is written; ``--max-failures``: a
batch that is failing wholesale stops starting runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch.helpers import FAILING, batch, results, tasks, write_tasks

Capsys = pytest.CaptureFixture[str]

FAILING_AT_ONCE = {**FAILING, "orchestrator": {"max_tries_per_round": 1}}
"""A failing run without back-off between tries: milliseconds, not seconds."""


def test_a_failed_run_is_tried_again_up_to_retries_times_each_with_its_own_log(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": "x", "task": "t", "overrides": FAILING_AT_ONCE}]
    )

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config, "--retries", "2",
        "--log-dir", "logs",
    )  # fmt: skip

    assert ran.code == 1
    (record,) = results(tmp_path / "out.jsonl")
    assert record["attempts"] == 3 and record["termination"] == "failed"
    first = Path(record["log_dir"]).name.removesuffix("-retry2")
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        first, f"{first}-retry1", f"{first}-retry2",
    ]  # fmt: skip


def test_a_run_that_completes_is_not_tried_again(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--retries", "2")

    assert results(tmp_path / "out.jsonl")[0]["attempts"] == 1


def test_max_failures_stops_a_batch_that_fails_wholesale(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(20, overrides=FAILING_AT_ONCE))

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config, "--concurrency", "1",
        "--max-failures", "3",
    )  # fmt: skip

    assert ran.code == 1
    assert len(results(tmp_path / "out.jsonl")) == 3
    assert "--max-failures: 3 of 3 runs failed (the limit is 3 failed runs)" in ran.err
    assert ran.out.splitlines()[1].split()[:6] == ["multi", "20", "0", "3", "0", "17"]


def test_a_share_of_failures_is_judged_only_after_ten_runs(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(15, overrides=FAILING_AT_ONCE))

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config, "--concurrency", "1",
        "--max-failures", "50%",
    )  # fmt: skip

    assert len(results(tmp_path / "out.jsonl")) == 10
    assert "(the limit is 50% of runs failed)" in ran.err


@pytest.mark.parametrize("value", ["0", "-1", "0%", "150%", "many"])
def test_max_failures_refuses_what_is_not_a_count_or_a_share(
    tmp_path: Path, fast_config: Path, capsys: Capsys, value: str
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--dry-run", "--max-failures", value)

    assert ran.code == 2
    assert "expected a number of runs such as 20, or a share such as 50%" in ran.err
