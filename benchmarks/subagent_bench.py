"""What delegation costs: 100 PAOR sub-agents in waves, model time excluded.

One agent's plan delegates N steps in W waves (each step of a wave depends on every step of
the wave before), so the steps of a wave run at once and the waves one after another: the
code a ``loop: paor`` agent runs (:class:`~actors.paor.subagents.SubAgents` under the
agent's own supervisor, each sub-agent a child actor with its own PAOR round). The model
and the tool answer at once and their time is measured and taken out: what is left is what
delegation adds per sub-agent — spawning the child actor under the agent's supervisor,
the ask that monitors it, its PAOR round's machinery (four LLM calls: plan, a search, a
note, a reflection), its report, and stopping it. Target: < 5 ms per sub-agent. Medians of
the repeats; each row also gives the worst repeat, and the most sub-agents seen in flight at
once. A second table gives the model a latency (10 ms a call by default) and reports the
wall time against its floor, the latency of the calls that must follow each other (the
parent's plan and reflection, and four per wave): the steps of a wave really run at once
(peak in flight: the wave's size) and the waves one after another.

    .venv/bin/python -m conclave.benchmarks.subagent_bench [--subagents 100] [--waves 1,10,100]
        [--latency 0.01] [--repeats R] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

import trio

from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    Usage,
)
from conclave.actors.loop import LoopBudget, Transcript
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.report import PaorEnd, PaorOutcome
from conclave.actors.paor.subagent_prompts import read_subtask
from conclave.actors.paor.subagents import SubAgents, SubAgentSetup
from conclave.benchmarks.bench_args import measure_and_report, positive_int, positive_ints
from conclave.benchmarks.machine import machine_info
from conclave.benchmarks.paor_bench import InstantTools, Stopwatch, call_message
from conclave.config.schema import PaorConfig
from conclave.runtime import Actor, ActorContext, Address, Envelope, open_actor_system

__all__ = ["TARGET_MS", "main", "measure"]

TARGET_MS = 5.0
"""Delegation overhead per sub-agent, model and tool time excluded."""
_USAGE = Usage(input_tokens=100, output_tokens=20)


class _Stopwatch(Stopwatch):
    """Time spent outside delegation (in the model and the tool), and sub-agents in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.peak = 0


class _InstantModel:
    """Plays the parent (its plan delegates the waves) and each sub-agent (a plan of one
    search, the search, a note, a reflection), at once; its time is counted apart."""

    def __init__(self, watch: _Stopwatch, subagents: int, waves: int, latency: float = 0.0) -> None:
        self._watch = watch
        self._latency = latency
        self._plan = _waves_plan(subagents, waves)
        self._n = 0

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if self._latency:
            await trio.sleep(self._latency)
        started = time.perf_counter()
        self._n += 1
        watch = self._watch
        offered = [t.name for t in request.tools]
        sub = read_subtask(request.messages)
        if offered == ["submit_plan"]:
            if sub is None:
                message = call_message(self._n, "submit_plan", self._plan)
            else:
                watch.in_flight += 1
                watch.peak = max(watch.peak, watch.in_flight)
                step = {"id": "1", "action": "search", "tools": ["search"]}
                message = call_message(self._n, "submit_plan", {"goal": sub[1], "steps": [step]})
        elif offered == ["reflect"]:
            if sub is not None:
                watch.in_flight -= 1
            message = call_message(
                self._n, "reflect", {"goal_achieved": True, "progress": "found it"}
            )
        elif request.messages[-1].role == "tool" and request.messages[-1].content.startswith(
            "util.py"
        ):
            message = ChatMessage(role="assistant", content="searched")
        else:
            message = call_message(self._n, "search", {"pattern": "old_total"})
        watch.seconds += time.perf_counter() - started
        return Completion(message=message, usage=_USAGE)


def _waves_plan(subagents: int, waves: int) -> dict[str, Any]:
    """``subagents`` explore steps in ``waves`` waves: each depends on the wave before."""
    per = -(-subagents // waves)
    steps: list[dict[str, Any]] = []
    previous: list[str] = []
    for wave in range(waves):
        ids = [f"w{wave}s{n}" for n in range(per) if wave * per + n < subagents]
        steps.extend(
            {"id": i, "action": f"look at part {i}", "delegate": "explore", "depends_on": previous}
            for i in ids
        )
        previous = ids
    return {"goal": "understand every part", "steps": steps}


class _Host(Actor):
    """The agent: runs one PAOR round with sub-agents under its own supervisor."""

    def __init__(self, context: ActorContext, round_: Any) -> None:
        super().__init__(context)
        self._round = round_

    async def started(self) -> None:
        self.context.start_soon(self._round, self.context)

    async def handle(self, envelope: Envelope) -> None:
        return None


async def _delegate(
    subagents: int, waves: int, latency: float = 0.0
) -> tuple[float, float, int, PaorOutcome]:
    """One round delegating ``subagents`` in ``waves``: (wall seconds, seconds outside
    delegation but for ``latency``, peak in flight, outcome)."""
    watch = _Stopwatch()
    model, tools = _InstantModel(watch, subagents, waves, latency), InstantTools(watch)
    settings = PaorConfig(max_iterations=1, max_depth=1)
    outcomes: list[PaorOutcome] = []
    done = trio.Event()

    async def round_(context: ActorContext) -> None:
        setup = SubAgentSetup(
            agent="lead", backend=model, tools=tools, budget=LoopBudget(), settings=settings
        )
        loop = PaorLoop(
            backend=model,
            tools=tools,
            budget=LoopBudget(),
            settings=settings,
            delegate=SubAgents(context, setup, parent="lead"),
        )
        transcript = Transcript([ChatMessage(role="user", content="understand every part")])
        outcomes.append(await loop.run(transcript))
        done.set()

    async with open_actor_system(name="subagent_bench") as system:
        started = time.perf_counter()
        system.spawn(Address("agent", "lead"), lambda context: _Host(context, round_))
        await done.wait()
        wall = time.perf_counter() - started
    return wall, watch.seconds, watch.peak, outcomes[0]


def measure(subagents: int, waves: int, repeats: int) -> dict[str, Any]:
    per_subagent: list[float] = []
    peak, calls = 0, 0
    for _ in range(repeats):
        wall, outside, peak, outcome = trio.run(_delegate, subagents, waves)
        reports = outcome.subagents
        if len(reports) != subagents or any(r.end is not PaorEnd.GOAL_ACHIEVED for r in reports):
            raise RuntimeError(f"not every sub-agent achieved its goal: {outcome.summary()}")
        calls = sum(row.llm_calls for r in reports for row in r.usage)
        per_subagent.append((wall - outside) / subagents * 1e3)
    median = statistics.median(per_subagent)
    return {
        "subagents": subagents,
        "waves": waves,
        "repeats": repeats,
        "subagent_llm_calls": calls,
        "peak_in_flight": peak,
        "overhead_ms_per_subagent": median,
        "worst_ms_per_subagent": max(per_subagent),
        "target_ms": TARGET_MS,
        "meets_target": median < TARGET_MS,
    }


def measure_latency(subagents: int, waves: int, latency: float) -> dict[str, Any]:
    """One round with the model taking ``latency`` a call: its wall time and the floor."""
    wall, _, peak, outcome = trio.run(_delegate, subagents, waves, latency)
    if any(r.end is not PaorEnd.GOAL_ACHIEVED for r in outcome.subagents):
        raise RuntimeError(f"not every sub-agent achieved its goal: {outcome.summary()}")
    # The parent's plan and reflection, and each wave's four calls one after another.
    floor = (2 + 4 * waves) * latency
    return {
        "subagents": subagents,
        "waves": waves,
        "latency_s": latency,
        "peak_in_flight": peak,
        "wall_s": wall,
        "floor_s": floor,
        "wall_over_floor": wall / floor,
    }


def run_benchmark(
    subagents: int, waves: Sequence[int], repeats: int, latency: float
) -> dict[str, Any]:
    rows = [measure(subagents, w, repeats) for w in waves]
    return {
        "machine": machine_info(),
        "rows": rows,
        "with_latency": [measure_latency(subagents, w, latency) for w in waves],
        "target_ms": TARGET_MS,
        "met": all(row["meets_target"] for row in rows),
    }


def format_report(report: dict[str, Any]) -> str:
    out = ["PAOR sub-agents in waves: delegation overhead per sub-agent (model time excluded):"]
    out.append("")
    out.append(
        f"{'sub-agents':>10} {'waves':>5} {'LLM calls':>9} {'peak':>5} {'ms/sub':>7} "
        f"{'worst':>7} {'target':>7}  ok"
    )
    for row in report["rows"]:
        out.append(
            f"{row['subagents']:>10} {row['waves']:>5} {row['subagent_llm_calls']:>9} "
            f"{row['peak_in_flight']:>5} {row['overhead_ms_per_subagent']:>7.3f} "
            f"{row['worst_ms_per_subagent']:>7.3f} {'< ' + format(row['target_ms'], 'g'):>7}"
            f"  {'yes' if row['meets_target'] else 'NO'}"
        )
    timed = report["with_latency"]
    if timed:
        out += ["", f"with the model taking {timed[0]['latency_s'] * 1e3:g} ms a call:", ""]
        out.append(f"{'sub-agents':>10} {'waves':>5} {'peak':>5} {'wall s':>7} {'floor s':>7}")
        for row in timed:
            out.append(
                f"{row['subagents']:>10} {row['waves']:>5} {row['peak_in_flight']:>5} "
                f"{row['wall_s']:>7.3f} {row['floor_s']:>7.3f}"
            )
    return "\n".join(out)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds like 0.01, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected seconds above 0 and at most 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="subagent_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--subagents", type=positive_int, default=100, metavar="N")
    p.add_argument("--waves", type=positive_ints, default=[1, 10, 100], metavar="W[,W...]")
    p.add_argument("--latency", type=_seconds, default=0.01, metavar="S")
    p.add_argument("--repeats", type=positive_int, default=5, metavar="R")
    p.add_argument("--json", default="bench-results/subagent_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    too_many = [w for w in args.waves if w > args.subagents]
    if too_many:
        build_parser().error(
            f"--waves {','.join(map(str, too_many))}: more waves than --subagents "
            f"({args.subagents}); each wave needs a sub-agent"
        )
    return measure_and_report(
        args.json,
        lambda: run_benchmark(args.subagents, args.waves, args.repeats, args.latency),
        format_report,
        met=lambda report: bool(report["met"]),
    )


if __name__ == "__main__":
    raise SystemExit(main())
