"""The serve benchmark runs, tiny, through a real `conclave serve` process and real websocket
clients, and reports what it says it reports (not a timed test)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conclave.benchmarks import serve_bench


def test_a_tiny_run_delivers_every_line_to_every_client_and_reports_the_overhead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "serve.json"
    argv = ["--agents", "10", "--clients", "3", "--repeats", "1", "--json", str(out)]

    assert serve_bench.main(argv) == 0

    report = json.loads(out.read_text())
    [watched] = report["figures"]["watched"]
    assert watched["clients_done"] == 3
    assert watched["lines"] > 0 and watched["frames"] > 0
    assert report["parameters"]["clients"] == 3
    assert isinstance(report["met"], bool)
    assert (report["filed_overhead_pct"], report["target_overhead_pct"]) == (85, 10)
    printed = capsys.readouterr().out
    assert "fan-out latency p50 (ms)" in printed
    assert "server CPU overhead (median watched / median alone)" in printed
    assert "+85 %, <= 10 % with clients on other cores" in printed


def test_the_servers_cpu_is_split_into_its_own_code_and_the_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "serve.json"
    argv = ["--agents", "10", "--clients", "2", "--repeats", "1", "--json", str(out)]

    assert serve_bench.main(argv) == 0

    figures = json.loads(out.read_text())["figures"]
    for run in (*figures["alone"], *figures["watched"]):
        assert run["server_cpu_s"] == pytest.approx(run["server_user_s"] + run["server_system_s"])
    assert "server CPU per run, user / system: 2 clients" in capsys.readouterr().out


def test_separate_cores_keeps_the_clients_off_the_servers_cores(tmp_path: Path) -> None:
    # In a process of its own: it pins the process that runs it.
    out = tmp_path / "serve.json"
    argv = ["--agents", "10", "--clients", "3", "--repeats", "1", "--separate-cores"]
    done = subprocess.run(
        [sys.executable, "-m", "conclave.benchmarks.serve_bench", *argv, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if len(os.sched_getaffinity(0)) < 2:
        assert done.returncode != 0 and "needs at least two cores" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["parameters"]["separate_cores"] is True
    assert report["figures"]["watched"][0]["clients_done"] == 3
    assert re.search(r"clients on a core of their own +\| yes", done.stdout)


def test_the_busy_control_runs_an_unwatched_run_beside_a_busy_core_in_every_repeat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "serve.json"
    argv = ["--agents", "10", "--clients", "2", "--repeats", "2", "--busy-control"]

    assert serve_bench.main([*argv, "--json", str(out)]) == 0

    report = json.loads(out.read_text())
    assert report["parameters"]["busy_control"] is True
    assert len(report["figures"]["busy_core"]) == 2
    figures = report["figures"]
    assert figures["busy_core_server_cpu_s"] > 0
    assert figures["server_cpu_overhead_vs_busy_pct"] == pytest.approx(
        100 * (figures["watched_server_cpu_s"] / figures["busy_core_server_cpu_s"] - 1)
    )
    printed = capsys.readouterr().out
    assert "control: no clients, their core kept busy" in printed
    assert "against the control: run time, server CPU (watched / busy core)" in printed
    assert "control: server CPU per run, user / system (median s)" in printed


def test_clients_asking_for_zlib_frames_are_sent_fewer_bytes_than_text_clients(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sent: dict[str, int] = {}
    for encoding in ("zlib", "text"):
        out = tmp_path / f"{encoding}.json"
        argv = ["--agents", "20", "--clients", "2", "--repeats", "1", "--encoding", encoding]
        assert serve_bench.main([*argv, "--json", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["parameters"]["encoding"] == encoding
        sent[encoding] = report["figures"]["watched"][0]["bytes_received"]

    # A 20-agent run's stream is tens of kilobytes of text for each client.
    assert sent["text"] > 2 * 20_000
    assert sent["zlib"] * 3 < sent["text"]
    assert "bytes sent per watched run (all clients; MB)" in capsys.readouterr().out
