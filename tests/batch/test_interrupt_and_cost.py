"""Stopping a batch: Ctrl+C and SIGTERM as real signals to a real ``conclave batch``
process, then resuming; ``--max-cost`` against priced calls to a loopback OpenAI-compatible
server, and against a scripted backend's pretend price, offline."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import yaml

from conclave.benchmarks.http_server import model_name, open_server_process
from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.cli.helpers import conclave, finish, start

Capsys = pytest.CaptureFixture[str]


def _wait_for_lines(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never held {count} lines")


def test_ctrl_c_keeps_every_finished_result_and_a_resume_completes_a_1000_task_batch(
    tmp_path: Path, fast_config: Path
) -> None:
    lines = [{"id": f"t{i}", "task": f"Task {i}", "expected": "agent"} for i in range(1000)]
    write_tasks(tmp_path / "tasks.jsonl", lines)
    out = tmp_path / "out.jsonl"
    flags = (
        "tasks.jsonl", "--out", "out.jsonl", "--config", str(fast_config),
        "--agent-mode", "single", "--refinement", "off", "--concurrency", "32",
        "--grade", "contains",
    )  # fmt: skip
    process = start("batch", *flags, cwd=tmp_path)
    _wait_for_lines(out, 50)

    process.send_signal(signal.SIGINT)
    _, err = finish(process)

    assert process.returncode == 130, err
    assert "stopping; runs in flight are cancelled" in err
    interrupted = results(out)  # every line whole
    assert 50 <= len(interrupted) < 1000
    assert {r["termination"] for r in interrupted} == {"completed"}  # nothing cancelled written

    resumed = conclave("batch", *flags, cwd=tmp_path, timeout=120)

    assert resumed.returncode == 0, resumed.stderr
    final = results(out)
    assert sorted(r["id"] for r in final) == sorted(f"t{i}" for i in range(1000))
    assert "100.0% (1000/1000)" in resumed.stdout


def test_sigterm_stops_the_batch_with_exit_code_143(tmp_path: Path) -> None:
    from tests.cli.helpers import write_config

    slow = write_config(tmp_path / "slow.yaml", [{"id": "s", "seed": 1, "latency": 0.05}])
    write_tasks(tmp_path / "tasks.jsonl", tasks(500))
    process = start(
        "batch", "tasks.jsonl", "--out", "out.jsonl", "--config", str(slow),
        "--workers", "2", "--concurrency", "4", cwd=tmp_path,
    )  # fmt: skip
    _wait_for_lines(tmp_path / "out.jsonl", 4)

    process.send_signal(signal.SIGTERM)
    out, err = finish(process)

    assert process.returncode == 143, err
    written = results(tmp_path / "out.jsonl")
    assert 4 <= len(written) < 500
    assert len({r["id"] for r in written}) == len(written)
    assert out.splitlines()[0].split()[0] == "mode"  # the summary still printed


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


def test_max_cost_stops_starting_runs_once_the_batch_has_spent_it(
    tmp_path: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(20))
    with open_server_process(latency=0.0, jitter=0.0) as server:
        config = _priced_config(tmp_path / "priced.yaml", server.url)
        one_task = write_tasks(tmp_path / "one_task.jsonl", tasks(1))
        one = batch(
            capsys, one_task, "--out", "one.jsonl", "--config", config,
            "--agent-mode", "single", "--refinement", "off",
        )  # fmt: skip
        cost = results(tmp_path / "one.jsonl")[0]["cost_usd"]
        assert one.code == 0 and cost > 0

        ran = batch(
            capsys, source, "--out", "out.jsonl", "--config", config, "--concurrency", "1",
            "--agent-mode", "single", "--refinement", "off", "--max-cost", str(cost * 2.5),
        )  # fmt: skip

    assert ran.code == 3
    assert "reached" in ran.err and "starting no more runs" in ran.err
    assert len(results(tmp_path / "out.jsonl")) == 3  # 2 runs spend less, the 3rd reaches it
    row = ran.out.strip().splitlines()[1].split()
    assert row[:6] == ["single-norefine", "20", "3", "0", "0", "17"]


def test_max_cost_stops_a_batch_of_priced_scripted_runs_offline(
    tmp_path: Path, capsys: Capsys
) -> None:
    price = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
    agents = [{"id": "s", "backend": {"type": "scripted", "latency": 0, "price": price}}]
    config = tmp_path / "priced-scripted.yaml"
    config.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    one = batch(
        capsys, write_tasks(tmp_path / "one.jsonl", tasks(1)), "--out", "one-out.jsonl",
        "--config", config, "--agent-mode", "single", "--refinement", "off",
    )  # fmt: skip
    cost = results(tmp_path / "one-out.jsonl")[0]["cost_usd"]
    assert one.code == 0 and cost > 0

    ran = batch(
        capsys, write_tasks(tmp_path / "tasks.jsonl", tasks(5)), "--out", "out.jsonl",
        "--config", config, "--concurrency", "1", "--agent-mode", "single",
        "--refinement", "off", "--max-cost", str(cost / 2),
    )  # fmt: skip

    assert ran.code == 3
    assert "reached" in ran.err and "starting no more runs" in ran.err
    assert len(results(tmp_path / "out.jsonl")) == 1  # the run in flight finishes, no other


def test_a_max_cost_below_a_cent_is_said_back_as_given_not_as_zero(
    tmp_path: Path, capsys: Capsys
) -> None:
    price = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    agents = [{"id": "s", "backend": {"type": "scripted", "latency": 0, "price": price}}]
    config = tmp_path / "priced-scripted.yaml"
    config.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")

    ran = batch(
        capsys, write_tasks(tmp_path / "tasks.jsonl", tasks(3)), "--out", "out.jsonl",
        "--config", config, "--concurrency", "1", "--agent-mode", "single",
        "--refinement", "off", "--max-cost", "0.000001",
    )  # fmt: skip

    assert ran.code == 3
    assert "--max-cost $0.000001 reached" in ran.err
