"""What watching a run over ``conclave serve`` costs: fan-out latency, and the run's time.

A real ``conclave serve`` process (scripted agents, ring visibility, 200 ms ±50 % per call)
runs one N-agent run twice, interleaved over the repeats:

* **no clients**: started with ``watch: false``; its result is read once it has ended;
* **C clients**: C websocket clients (trio-websocket, in this process) subscribe as soon as
  the run exists and read every line to ``result``.

Fan-out latency is, per line a client receives, the wall time it arrives minus the wall
time of its event (the stream's ``t`` plus the run's start, which the lines' ``time`` fields
give to the millisecond): p50 and p99 over every line of every client. The run's time is the
result's ``duration_s``; the target is C clients within 10 % of none (median of repeats).
Client and server share the machine's cores, as they would on one machine in use.
Prints a table and writes JSON (machine, parameters, figures).

    .venv/bin/python -m benchmarks.serve_bench [--agents N] [--clients C] [--repeats R]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
import yaml
from trio_websocket import WebSocketConnection, open_websocket_url

from benchmarks.bench_args import check_report_path, write_report
from benchmarks.machine import machine_info

__all__ = ["main"]

_T = re.compile(r'"t": ([0-9.e-]+), "time": "([^"]+)"')
"""The ``t`` and ``time`` of a stream-json line: read without parsing the whole line, so
the clients' own cost stays small next to the server's."""
_MAX_FRAME = 2**26


def _config(path: Path, agents: int) -> Path:
    data = {
        "agents": [
            {"id": f"a{i:04d}", "backend": {"type": "scripted", "seed": i, "latency": 0.2}}
            for i in range(agents)
        ],
        "orchestrator": {"visibility": "ring"},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


class _Server:
    """A ``conclave serve`` subprocess on a free port."""

    def __init__(self, config: Path, log_dir: Path) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ui.cli",
                "serve",
                "--port",
                "0",
                "--config",
                str(config),
                "--log-dir",
                str(log_dir),
                "--client-buffer",
                "1000000",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().split("listening on ")[1].strip()
        self.token = self.process.stdout.readline().split("token: ")[1].strip()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def _connect(server: _Server) -> Any:
    headers = [(b"authorization", f"Bearer {server.token}".encode())]
    return open_websocket_url(server.url, extra_headers=headers, max_message_size=_MAX_FRAME)


async def _lines(ws: WebSocketConnection) -> list[str]:
    frame = await ws.get_message()
    return str(frame).split("\n")


async def _until_result(ws: WebSocketConnection, arrivals: list[tuple[float, float, float]]) -> str:
    """Read lines until ``result`` (returned); each event line's (arrival wall time, t,
    time-as-unix) goes to ``arrivals``."""
    while True:
        lines = await _lines(ws)
        now = time.time()
        for line in lines:
            match = _T.search(line, 0, 300)
            if match is not None:
                wall = datetime.datetime.fromisoformat(match.group(2)).timestamp()
                arrivals.append((now, float(match.group(1)), wall))
            if line.startswith('{"type": "result"'):
                return line


async def _alone(server: _Server) -> float:
    """A run nobody watches: its duration."""
    async with await _connect(server) as ws:
        await _lines(ws)  # welcome
        start = {"type": "start_run", "task": "Name three uses of a paperclip", "watch": False}
        await ws.send_message(json.dumps(start))
        run_id = json.loads((await _lines(ws))[0])["run_id"]
    while True:  # poll as a dashboard would; a subscriber after the end gets the result
        await trio.sleep(0.25)
        async with await _connect(server) as ws:
            await _lines(ws)
            await ws.send_message(json.dumps({"type": "subscribe", "run_id": run_id}))
            lines = [json.loads(line) for line in await _lines(ws)]
            if lines[0]["ended"]:
                result = (
                    lines[-1]
                    if lines[-1]["type"] == "result"
                    else json.loads((await _lines(ws))[0])
                )
                return float(result["duration_s"])


async def _watched(server: _Server, clients: int) -> dict[str, Any]:
    """A run C clients watch from its start: its duration and every line's latency."""
    arrivals: list[tuple[float, float, float]] = []
    run_id: list[str] = []
    known = trio.Event()
    ready = 0
    all_ready = trio.Event()
    results: list[dict[str, Any]] = []

    async def client(index: int) -> None:
        nonlocal ready
        async with await _connect(server) as ws:
            await _lines(ws)
            ready += 1
            if ready == clients:
                all_ready.set()
            if index == 0:
                await all_ready.wait()
                start = {"type": "start_run", "task": "Name three uses of a paperclip"}
                await ws.send_message(json.dumps(start))
                run_id.append(json.loads((await _lines(ws))[0])["run_id"])
                known.set()
            else:
                await known.wait()
                await ws.send_message(json.dumps({"type": "subscribe", "run_id": run_id[0]}))
            results.append(json.loads(await _until_result(ws, arrivals)))

    async with trio.open_nursery() as nursery:
        for index in range(clients):
            nursery.start_soon(client, index)
    origin = max(wall - t for _, t, wall in arrivals)  # ``time`` is cut to the millisecond
    latencies = sorted(max(0.0, now - (origin + t)) for now, t, _ in arrivals)
    return {
        "duration_s": float(results[0]["duration_s"]),
        "lines": len(arrivals),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max_ms": 1000 * latencies[-1],
        "clients_done": len(results),
    }


async def _measure(server: _Server, clients: int, repeats: int) -> dict[str, Any]:
    alone: list[float] = []
    watched: list[dict[str, Any]] = []
    for _ in range(repeats):
        alone.append(await _alone(server))
        watched.append(await _watched(server, clients))
    base = statistics.median(alone)
    with_clients = statistics.median(w["duration_s"] for w in watched)
    return {
        "alone_s": alone,
        "watched": watched,
        "alone_median_s": base,
        "watched_median_s": with_clients,
        "overhead_pct": 100 * (with_clients - base) / base,
        "p50_ms": statistics.median(w["p50_ms"] for w in watched),
        "p99_ms": statistics.median(w["p99_ms"] for w in watched),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_bench")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default="bench-results/serve_bench.json", metavar="PATH")
    args = parser.parse_args(argv)
    problem = check_report_path(args.json)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as scratch:
        root = Path(scratch)
        server = _Server(_config(root / "agents.yaml", args.agents), root / "runs")
        try:
            figures = trio.run(_measure, server, args.clients, args.repeats)
        finally:
            server.stop()
    verdict = "ok" if figures["overhead_pct"] <= 10 else "OVER the 10 % target"
    rows = [
        ("agents", f"{args.agents:,}"),
        ("clients", f"{args.clients:,}"),
        ("repeats", f"{args.repeats}"),
        ("run, no clients (median s)", f"{figures['alone_median_s']:.2f}"),
        (f"run, {args.clients} clients (median s)", f"{figures['watched_median_s']:.2f}"),
        ("run time overhead", f"{figures['overhead_pct']:+.1f} % ({verdict})"),
        ("lines delivered per watched run (all clients)", f"{figures['watched'][0]['lines']:,}"),
        ("fan-out latency p50 (ms)", f"{figures['p50_ms']:.1f}"),
        ("fan-out latency p99 (ms)", f"{figures['p99_ms']:.1f}"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"| {'conclave serve'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|-------|")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")
    report = {
        "benchmark": "serve_bench",
        "machine": machine_info(),
        "parameters": {
            "agents": args.agents,
            "clients": args.clients,
            "repeats": args.repeats,
            "latency_s": 0.2,
            "visibility": "ring",
        },
        "figures": figures,
        "target_overhead_pct": 10,
        "met": figures["overhead_pct"] <= 10,
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_report(path, json.dumps(report, indent=2) + "\n")
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
