"""What the Plan-Act-Observe-Reflect machine costs per iteration, model time excluded.

One PAOR round (:class:`~actors.paor.driver.PaorLoop`, the code an agent with ``loop: paor``
runs) is driven for N iterations by an instant backend that replays a model's replies (a
plan, a tool call, a note, a reflection: four LLM calls an iteration) and an instant tool.
Time spent inside the backend and the tool is measured and taken out: what is left is the
PAOR overhead — the machine's transitions, the plan and reflection checks, recording the
observations, the loop engine's steps and the transcript — which is what an iteration adds
to the model's own time. The target is < 2 ms an iteration. Medians of the repeats; each
row also gives the worst repeat.

    .venv/bin/python -m conclave.benchmarks.paor_bench [--iterations 15,100] [--repeats R]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    ToolCall,
    ToolSchema,
)
from conclave.actors.loop import LoopBudget, Transcript
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.report import PaorEnd
from conclave.actors.tools.protocol import ToolResult
from conclave.benchmarks.bench_args import positive_ints
from conclave.benchmarks.machine import machine_info
from conclave.config.schema import PaorConfig

__all__ = ["TARGET_MS", "InstantTools", "Stopwatch", "call_message", "main", "measure"]

TARGET_MS = 2.0
"""PAOR overhead per iteration, model and tool time excluded."""
_TASK = "Find all usages of function old_total and rename it to compute_total"


class Stopwatch:
    """Time spent outside PAOR: in the model and in the tool."""

    def __init__(self) -> None:
        self.seconds = 0.0


class _InstantModel:
    """Replays a model's four replies an iteration, at once; its time is counted apart."""

    def __init__(self, watch: Stopwatch) -> None:
        self._watch = watch
        self._n = 0

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        started = time.perf_counter()
        self._n += 1
        offered = [t.name for t in request.tools]
        if offered == ["submit_plan"]:
            plan = {
                "goal": "rename",
                "steps": [{"id": "1", "action": "search", "tools": ["search"]}],
            }
            message = call_message(self._n, "submit_plan", plan)
        elif offered == ["reflect"]:
            message = call_message(
                self._n, "reflect", {"goal_achieved": False, "progress": f"step {self._n}"}
            )
        elif request.messages[-1].role == "tool":
            message = ChatMessage(role="assistant", content="searched")
        else:
            message = call_message(self._n, "search", {"pattern": f"old_total{self._n}"})
        self._watch.seconds += time.perf_counter() - started
        return Completion(message=message)


class InstantTools:
    """One read-only ``search`` tool that answers at once; its time is counted apart."""

    def __init__(self, watch: Stopwatch) -> None:
        self._watch = watch
        self._schemas = (
            ToolSchema(name="search", description="search", parameters={}, read_only=True),
        )

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        started = time.perf_counter()
        result = ToolResult(ok=True, output=f"util.py:1: def old_total(xs):  # {call.id}")
        self._watch.seconds += time.perf_counter() - started
        return result


def call_message(n: int, name: str, arguments: object) -> ChatMessage:
    call = ToolCall(id=f"c{n}", name=name, arguments=json.dumps(arguments))
    return ChatMessage(role="assistant", tool_calls=(call,))


async def _round(iterations: int) -> tuple[float, float, int]:
    """One round of ``iterations``: (wall seconds, seconds outside PAOR, moves recorded)."""
    watch = Stopwatch()
    moves: list[object] = []
    loop = PaorLoop(
        backend=_InstantModel(watch),
        tools=InstantTools(watch),
        budget=LoopBudget(),
        settings=PaorConfig(max_iterations=iterations),
        on_move=lambda s, t, i: moves.append((s, t, i)),
    )
    transcript = Transcript([ChatMessage(role="user", content=_TASK)])
    started = time.perf_counter()
    outcome = await loop.run(transcript)
    wall = time.perf_counter() - started
    assert outcome.end is PaorEnd.MAX_ITERATIONS and outcome.iterations == iterations
    return wall, watch.seconds, len(moves)


def measure(iterations: int, repeats: int) -> dict[str, Any]:
    per_iteration: list[float] = []
    moves = 0
    for _ in range(repeats):
        wall, outside, moves = trio.run(_round, iterations)
        per_iteration.append((wall - outside) / iterations * 1e3)
    median = statistics.median(per_iteration)
    return {
        "iterations": iterations,
        "repeats": repeats,
        "llm_calls_per_iteration": 4,
        "transitions": moves,
        "overhead_ms_per_iteration": median,
        "worst_ms_per_iteration": max(per_iteration),
        "target_ms": TARGET_MS,
        "meets_target": median < TARGET_MS,
    }


def format_report(rows: list[dict[str, Any]]) -> str:
    out = ["PAOR overhead per iteration (model and tool time excluded):", ""]
    out.append(
        f"{'iterations':>10} {'transitions':>11} {'ms/iter':>8} {'worst':>8} {'target':>8}  ok"
    )
    for row in rows:
        out.append(
            f"{row['iterations']:>10} {row['transitions']:>11} "
            f"{row['overhead_ms_per_iteration']:>8.3f} {row['worst_ms_per_iteration']:>8.3f} "
            f"{'< ' + format(row['target_ms'], 'g'):>8}  {'yes' if row['meets_target'] else 'NO'}"
        )
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paor_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=positive_ints, default=[15, 100], metavar="N[,N...]")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--json", default="bench-results/paor_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    rows = [measure(n, args.repeats) for n in args.iterations]
    print(format_report(rows))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_info(), "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
