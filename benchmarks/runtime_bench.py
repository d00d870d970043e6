"""What the actor kernel costs on top of bare trio.

Measures, in one run, the same traffic two ways:

* **raw**: trio memory channels between two tasks: one-way throughput (a sender task
  streaming into a receiver task through a channel as big as a default mailbox) and a
  ping-pong round trip over a request and a reply channel.
* **conclave**: the full path a message takes in the kernel: ``open_actor_system`` with
  three no-op routing rules added by ``system.add_rule``, then ``system.tell`` in a loop to
  a counting actor (timed until it has handled every message), and ``system.ask`` to an
  actor that answers with ``self.context.reply``.

Each measurement runs in a fresh ``trio.run``; the repeats are interleaved (raw, conclave,
raw, ...) so drift on a shared, noisy machine hits both sides alike, and the best of the
repeats is reported. Prints a table and writes JSON (machine, parameters, figures).

    .venv/bin/python -m conclave.benchmarks.runtime_bench [--messages N] [--repeats R] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing

from conclave.benchmarks.bench_args import positive_int
from conclave.benchmarks.machine import machine_info
from conclave.runtime import (
    DELIVER,
    Actor,
    ActorContext,
    Address,
    Envelope,
    Facts,
    MailboxSpec,
    Message,
    message,
    open_actor_system,
)
from conclave.runtime.routing import Decision

__all__ = ["main"]

RULES = 3
CAPACITY = MailboxSpec().capacity
"""Raw channels get the default mailbox capacity, so both sides buffer alike."""
THROUGHPUT_TARGET = 0.5
"""Full-path one-way throughput must be at least this fraction of raw."""
ROUND_TRIP_TARGET = 2.5
"""An ask round trip may take at most this many raw ping-pong round trips."""


@message(kind="bench.tick")
class Tick(Message):
    pass


@message(kind="bench.ping")
class Ping(Message):
    pass


@message(kind="bench.pong")
class Pong(Message):
    pass


TICK, PING, PONG = Tick(), Ping(), Pong()


@attrs.frozen
class NoOpRule:
    """Looks at every envelope and lets it through: the cheapest rule a mode can add."""

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        return DELIVER


# ---------------------------------------------------------------- raw trio


async def raw_one_way(n: int) -> float:
    """Seconds for ``n`` messages from a sender task to a receiver task."""
    send, receive = trio.open_memory_channel[object](CAPACITY)
    done = trio.Event()

    async def receiver() -> None:
        count = 0
        async for _ in receive:
            count += 1
            if count == n:
                done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receiver)
        await trio.testing.wait_all_tasks_blocked()
        start = time.perf_counter()
        for _ in range(n):
            await send.send(TICK)
        await done.wait()
        elapsed = time.perf_counter() - start
        nursery.cancel_scope.cancel()
    return elapsed


async def raw_round_trip(n: int) -> float:
    """Seconds for ``n`` ping-pongs over a request and a reply channel."""
    request_send, request_receive = trio.open_memory_channel[object](1)
    reply_send, reply_receive = trio.open_memory_channel[object](1)

    async def ponger() -> None:
        async for _ in request_receive:
            await reply_send.send(PONG)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ponger)
        await trio.testing.wait_all_tasks_blocked()
        start = time.perf_counter()
        for _ in range(n):
            await request_send.send(PING)
            await reply_receive.receive()
        elapsed = time.perf_counter() - start
        nursery.cancel_scope.cancel()
    return elapsed


# ---------------------------------------------------------------- conclave


class Counter(Actor):
    """Counts ticks and sets ``done`` when it has handled the expected number."""

    def __init__(self, context: ActorContext, expected: int, done: trio.Event) -> None:
        super().__init__(context)
        self.expected = expected
        self.done = done
        self.count = 0

    async def handle(self, envelope: Envelope) -> None:
        self.count += 1
        if self.count == self.expected:
            self.done.set()


class Ponger(Actor):
    async def handle(self, envelope: Envelope) -> None:
        self.context.reply(envelope, PONG)


COUNTER = Address("bench", "counter")
PONGER = Address("bench", "ponger")


async def conclave_one_way(n: int) -> float:
    """Seconds for ``n`` ``system.tell`` calls to be handled by a counting actor."""
    done = trio.Event()
    async with open_actor_system(name="bench") as system:
        for _ in range(RULES):
            system.add_rule(NoOpRule())
        system.spawn(COUNTER, lambda context: Counter(context, n, done))
        await trio.testing.wait_all_tasks_blocked()
        start = time.perf_counter()
        for _ in range(n):
            await system.tell(COUNTER, TICK)
        await done.wait()
        elapsed = time.perf_counter() - start
    return elapsed


async def conclave_round_trip(n: int) -> float:
    """Seconds for ``n`` ``system.ask`` round trips to an actor that replies."""
    async with open_actor_system(name="bench") as system:
        for _ in range(RULES):
            system.add_rule(NoOpRule())
        system.spawn(PONGER, Ponger)
        await trio.testing.wait_all_tasks_blocked()
        start = time.perf_counter()
        for _ in range(n):
            await system.ask(PONGER, PING)
        elapsed = time.perf_counter() - start
    return elapsed


# ---------------------------------------------------------------- driver

Measure = Callable[[int], Awaitable[float]]

MEASUREMENTS: dict[str, Measure] = {
    "raw_one_way": raw_one_way,
    "conclave_one_way": conclave_one_way,
    "raw_round_trip": raw_round_trip,
    "conclave_round_trip": conclave_round_trip,
}


def _time(measure: Measure, n: int) -> float:
    gc.collect()
    return trio.run(measure, n)


def run_benchmark(messages: int, repeats: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in MEASUREMENTS}
    for measure in MEASUREMENTS.values():
        _time(measure, min(messages, 1000))  # warm-up: imports, caches, code paths
    for _ in range(repeats):
        for name, measure in MEASUREMENTS.items():
            samples[name].append(_time(measure, messages))
    best = {name: min(times) for name, times in samples.items()}

    raw_rate = messages / best["raw_one_way"]
    conclave_rate = messages / best["conclave_one_way"]
    raw_rt = best["raw_round_trip"] / messages * 1e6
    conclave_rt = best["conclave_round_trip"] / messages * 1e6
    throughput_ratio = conclave_rate / raw_rate
    round_trip_ratio = conclave_rt / raw_rt
    return {
        "benchmark": "runtime_bench",
        "machine": machine_info(),
        "parameters": {
            "messages": messages,
            "repeats": repeats,
            "statistic": "best of repeats",
            "routing_rules": RULES,
            "mailbox_capacity": CAPACITY,
            "event_taps": 0,
        },
        "figures": {
            "one_way": {
                "unit": "msgs/s",
                "raw": raw_rate,
                "conclave": conclave_rate,
                "ratio": throughput_ratio,
                "target": f">= {THROUGHPUT_TARGET}",
                "met": throughput_ratio >= THROUGHPUT_TARGET,
            },
            "round_trip": {
                "unit": "us",
                "raw": raw_rt,
                "conclave": conclave_rt,
                "ratio": round_trip_ratio,
                "target": f"<= {ROUND_TRIP_TARGET}",
                "met": round_trip_ratio <= ROUND_TRIP_TARGET,
            },
        },
        "samples_seconds": samples,
    }


def format_table(report: dict[str, Any]) -> str:
    one_way = report["figures"]["one_way"]
    round_trip = report["figures"]["round_trip"]
    rows = [
        ("", "raw", "conclave", "ratio", "target"),
        (
            "one-way msgs/s",
            f"{one_way['raw']:,.0f}",
            f"{one_way['conclave']:,.0f}",
            f"{one_way['ratio']:.2f}",
            f">= {THROUGHPUT_TARGET:.2f}" + ("" if one_way["met"] else "  MISSED"),
        ),
        (
            "round trip µs",
            f"{round_trip['raw']:.2f}",
            f"{round_trip['conclave']:.2f}",
            f"{round_trip['ratio']:.2f}",
            f"<= {ROUND_TRIP_TARGET:.2f}" + ("" if round_trip["met"] else "  MISSED"),
        ),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    params = report["parameters"]
    title = (
        f"runtime_bench: {params['messages']:,} messages, best of {params['repeats']}, "
        f"{params['routing_rules']} no-op rules"
    )
    return "\n".join([title, *lines])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.runtime_bench",
        description="Kernel overhead: full actor path against raw trio memory channels.",
    )
    p.add_argument("--messages", type=positive_int, default=50_000, metavar="N")
    p.add_argument("--repeats", type=positive_int, default=5, metavar="R")
    p.add_argument("--json", default="bench-results/runtime_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = run_benchmark(args.messages, args.repeats)
    print(format_table(report))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
