"""Results a person can trust: a typo in a line's overrides is that line's error, one writer
per RESULTS file, results made with another config are not silently reused, ``--max-cost``
covers the whole batch across resumes."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest
import yaml

from conclave.benchmarks.http_server import model_name, open_server_process
from conclave.ui.batch.lock import lock_path, lock_results
from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.cli.helpers import finish, start, write_config

Capsys = pytest.CaptureFixture[str]

TYPO = {"id": "typo", "task": "t", "overrides": {"orchestrator": {"run_timout": 5}}}


# ------------------------------------------------------------- a typo in overrides


def test_an_unknown_orchestrator_override_is_that_lines_error_and_the_rest_run(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [*tasks(2), TYPO])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert ran.code == 2
    assert (
        "tasks.jsonl:3: overrides refused: overrides.orchestrator.run_timout: unknown key "
        "'run_timout'"
    ) in ran.err
    assert "did you mean 'run_timeout'?" in ran.err
    assert "internal error" not in ran.err
    assert sorted(line["id"] for line in results(tmp_path / "out.jsonl")) == ["t0", "t1"]


def test_a_dry_run_reports_an_unknown_orchestrator_override_as_a_bad_line(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [*tasks(1), TYPO])

    ran = batch(capsys, source, "--dry-run", "--config", fast_config)

    assert ran.code == 2
    assert "tasks.jsonl:2: overrides refused: overrides.orchestrator.run_timout" in ran.err
    assert "1 good line, 1 bad line; dry run" in ran.err


# ------------------------------------------------------------- one writer


def test_a_second_writer_of_one_results_file_is_refused_naming_the_holder(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    held = lock_results(tmp_path / "out.jsonl")
    try:
        ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)
    finally:
        held.release()

    assert ran.code == 2
    holder = f"pid {os.getpid()} on host {socket.gethostname()}"
    assert f"--out out.jsonl is being written by another batch ({holder})" in ran.err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_running_batch_holds_its_results_file_against_another_batch(
    tmp_path: Path, capsys: Capsys
) -> None:
    slow = write_config(tmp_path / "slow.yaml", [{"id": "a", "latency": 30}])
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))
    first = start("batch", str(source), "--out", "out.jsonl", "--config", str(slow), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while b"pid" not in _read(lock_path(tmp_path / "out.jsonl")):
            assert time.monotonic() < deadline, "the first batch never took the lock"
            time.sleep(0.02)

        second = batch(capsys, source, "--out", "out.jsonl", "--config", str(slow))
    finally:
        first.send_signal(signal.SIGTERM)
        finish(first)

    assert second.code == 2
    assert f"(pid {first.pid} on host {socket.gethostname()})" in second.err


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def test_a_lock_file_left_by_a_dead_batch_does_not_block_the_next(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))
    lock_path(tmp_path / "out.jsonl").write_text('{"pid": 999999999, "host": "gone"}')

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert ran.code == 0, ran.err
    assert not lock_path(tmp_path / "out.jsonl").exists()


# ------------------------------------------------------------- the config's hash


def test_each_result_records_the_hash_of_its_effective_config(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    override = {"id": "long", "task": "t", "overrides": {"orchestrator": {"run_timeout": 99}}}
    source = write_tasks(tmp_path / "tasks.jsonl", [*tasks(2), override])

    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    hashes = {line["id"]: line["config_hash"] for line in results(tmp_path / "out.jsonl")}
    assert hashes["t0"] == hashes["t1"] != hashes["long"]
    assert all(len(h) == 16 for h in hashes.values())


def test_resuming_with_another_config_is_refused_naming_the_results(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--timeout", "77")

    assert ran.code == 2
    assert "--out out.jsonl: 2 results in it were made with another config" in ran.err
    assert "RESULTS" not in ran.err  # the file's name, not the placeholder of the docs
    assert "t0 (multi), t1 (multi)" in ran.err and "--rerun-changed" in ran.err
    assert len(results(tmp_path / "out.jsonl")) == 2


def test_rerun_changed_runs_again_only_the_lines_whose_config_changed(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)
    longer = {"orchestrator": {"run_timeout": 9}}
    write_tasks(source, [tasks(1)[0], {"id": "t1", "task": "Task number 1", "overrides": longer}])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--rerun-changed")

    assert ran.code == 0, ran.err
    lines = results(tmp_path / "out.jsonl")
    assert sorted(line["id"] for line in lines[:2]) == ["t0", "t1"]
    assert lines[2]["id"] == "t1"
    first_t1 = next(line for line in lines if line["id"] == "t1")
    assert lines[2]["config_hash"] != first_t1["config_hash"]


def test_force_keeps_the_results_made_with_another_config(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config, "--timeout", "77", "--force"
    )

    assert ran.code == 0, ran.err
    assert "2 runs already in out.jsonl; skipped" in ran.err
    assert len(results(tmp_path / "out.jsonl")) == 2


# ------------------------------------------------------------- the budget and prices


def _priced_config(path: Path, url: str) -> Path:
    backend = {
        "type": "openai",
        "model": model_name("a", 1),
        "base_url": url,
        "api_key": "sk-loopback-test",
        "price": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0},
    }
    data = {"agents": [{"id": "a", "backend": backend}], "orchestrator": {"quiet_period": None}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_max_cost_covers_the_whole_batch_across_resumes(tmp_path: Path, capsys: Capsys) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(10))
    single = ("--agent-mode", "single", "--refinement", "off", "--concurrency", "1")
    with open_server_process(latency=0.0, jitter=0.0) as server:
        config = _priced_config(tmp_path / "priced.yaml", server.url)
        batch(capsys, write_tasks(tmp_path / "one_task.jsonl", tasks(1)), "--out", "one.jsonl",
              "--config", config, *single)  # fmt: skip
        cost = results(tmp_path / "one.jsonl")[0]["cost_usd"]
        budget = str(cost * 2.5)
        first = batch(
            capsys, source, "--out", "out.jsonl", "--config", config, *single, "--max-cost", budget
        )

        again = batch(
            capsys, source, "--out", "out.jsonl", "--config", config, *single, "--max-cost", budget
        )

    assert first.code == again.code == 3
    assert len(results(tmp_path / "out.jsonl")) == 3
    assert "--max-cost $" in again.err and "already reached by the runs in out.jsonl" in again.err
    assert again.out.strip().splitlines()[1].split()[:6] == [
        "single-norefine", "10", "3", "0", "0", "7",
    ]  # fmt: skip


def test_an_unpriced_backend_shows_no_cost_rather_than_zero_dollars(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    failing = {"agents": [{"id": "broken", "backend": {"error_rate": 1.0}}]}
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "x", "task": "t", "overrides": failing}])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert results(tmp_path / "out.jsonl")[0]["cost_usd"] is None
    header, row = ran.out.strip().splitlines()
    assert row.split()[header.split().index("cost") - 2] == "-"  # "timed out", "not run"
    assert "$0.0000" not in ran.out + ran.err
    assert json.loads(json.dumps(results(tmp_path / "out.jsonl")[0]))["usage"]
