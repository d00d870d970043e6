"""How much of a run's prompts a provider's prompt cache can serve.

Panels of N agents (3 and 10 by default) on the ``openai`` backend, against the scripted
loopback server (:mod:`benchmarks.http_server`) in this process, simulating OpenAI's prompt
cache (:mod:`benchmarks.prompt_cache`: a prompt's longest prefix seen before, in 128-token
blocks, none below 1,024 tokens). Prompts of a real length: a task of about 2,000 tokens
(a specification to review) and answers padded to about 300 tokens. Latency 200 ms ±50 %,
all-to-all, the default orchestrator. Each panel runs ``repeats`` times (scheduling varies
from run to run, and with it which answers each prompt shows); the table gives the median.

For each panel: LLM calls, prompt tokens, tokens read from the cache (as the run's own
usage reports them, and as the server counted them: the two must agree) and their share,
``cached_share``, which is what the layout of the prompt decides. Prints a table and
writes JSON (machine, parameters, rows).

    .venv/bin/python -m conclave.benchmarks.cache_bench [--agents 3,10] [--repeats 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import trio

from conclave.actors.run.driver import RunSpec, run
from conclave.benchmarks.bench_args import measure_and_report, positive_int
from conclave.benchmarks.http_server import ScriptedServer, loopback_panel, serve
from conclave.benchmarks.machine import machine_info
from conclave.benchmarks.prompt_cache import BLOCK_TOKENS, MIN_TOKENS, PromptCache

__all__ = ["ANSWER_TOKENS", "TASK", "main", "run_benchmark"]

ANSWER_TOKENS = 300
LATENCY = 0.2
JITTER = 0.5
RUN_LIMIT_S = 120.0
"""A run that takes longer has hung: the benchmark stops rather than wait."""
_REQUIREMENTS = (
    "accept uploads of up to {n} MB and reject larger ones with a message naming the limit",
    "keep a per-user quota of {n} GB and refuse writes past it without losing earlier data",
    "answer a listing of {n} thousand objects within two seconds at the 99th percentile",
    "retry a failed replication {n} times with exponential backoff before raising an alert",
    "log every deletion with who asked, when, and which {n} objects went, for a year",
    "let an operator drain one of {n} storage nodes without a client seeing an error",
)


def _task() -> str:
    """A specification to review, about 2,000 tokens: long enough that what every agent's
    prompt shares can be cached (a provider caches nothing under 1,024 tokens)."""
    lines = [
        "Review this specification of an object store and propose the three changes that "
        "would most reduce its operational risk, each with the requirement it touches, why, "
        "and how to verify the change.",
        "",
    ]
    for i in range(1, 73):
        requirement = _REQUIREMENTS[i % len(_REQUIREMENTS)].format(n=i * 3 + 7)
        lines.append(f"R{i}. The service must {requirement}.")
    return "\n".join(lines)


TASK = _task()


async def measure(agents: int) -> dict[str, Any]:
    """One run of ``agents`` agents against a fresh server and cache."""
    cache = PromptCache()
    server = ScriptedServer(
        latency=LATENCY, jitter=JITTER, answer_tokens=ANSWER_TOKENS, cache=cache
    )
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, server)
        with trio.fail_after(RUN_LIMIT_S):
            result = await run(
                RunSpec(task=TASK, config=loopback_panel(agents, f"http://127.0.0.1:{port}/v1"))
            )
        nursery.cancel_scope.cancel()
    total = result.usage.total
    prompt, cached = total.input_tokens or 0, total.cache_read_tokens or 0  # the server counts
    return {
        "termination": str(result.termination.value),
        "llm_calls": result.llm_calls,
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": cached / prompt if prompt else 0.0,
        "server_prompt_tokens": cache.stats.prompt_tokens,
        "server_cached_tokens": cache.stats.cached_tokens,
    }


def run_benchmark(
    sizes: Sequence[int], repeats: int, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    rows = []
    for agents in sizes:
        samples = []
        for repeat in range(repeats):
            sample = trio.run(measure, agents)
            samples.append(sample)
            if progress is not None:
                progress(
                    f"  {agents} agents, run {repeat + 1}/{repeats}: "
                    f"{sample['cached_share']:.1%} of {sample['prompt_tokens']:,} cached"
                )
        shares = [s["cached_share"] for s in samples]
        rows.append(
            {
                "agents": agents,
                "runs": repeats,
                "completed": all(s["termination"] == "completed" for s in samples),
                "llm_calls": statistics.median(s["llm_calls"] for s in samples),
                "prompt_tokens": statistics.median(s["prompt_tokens"] for s in samples),
                "cached_tokens": statistics.median(s["cached_tokens"] for s in samples),
                "cached_share": round(statistics.median(shares), 4),
                "cached_share_min": round(min(shares), 4),
                "cached_share_max": round(max(shares), 4),
                "server_agrees": all(
                    (s["server_prompt_tokens"], s["server_cached_tokens"])
                    == (s["prompt_tokens"], s["cached_tokens"])
                    for s in samples
                ),
                "samples": samples,
            }
        )
    return {
        "benchmark": "cache_bench",
        "machine": machine_info(),
        "parameters": {
            "sizes": list(sizes),
            "repeats": repeats,
            "task_chars": len(TASK),
            "answer_tokens": ANSWER_TOKENS,
            "latency_s": LATENCY,
            "jitter": JITTER,
            "cache_min_tokens": MIN_TOKENS,
            "cache_block_tokens": BLOCK_TOKENS,
        },
        "rows": rows,
    }


def format_table(report: dict[str, Any]) -> str:
    header = ("agents", "runs", "LLM calls", "prompt tokens", "cached", "share", "range")
    rows = [
        (
            str(r["agents"]),
            str(r["runs"]),
            f"{r['llm_calls']:g}",
            f"{r['prompt_tokens']:,.0f}",
            f"{r['cached_tokens']:,.0f}",
            f"{r['cached_share']:.1%}",
            f"{r['cached_share_min']:.1%}-{r['cached_share_max']:.1%}",
        )
        for r in report["rows"]
    ]
    widths = [max(len(x) for x in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    params = report["parameters"]
    title = (
        f"cache_bench: prompt tokens read from a simulated OpenAI prompt cache (task "
        f"{params['task_chars']:,} chars, answers ~{params['answer_tokens']} tokens; "
        f"median of {params['repeats']} runs)"
    )
    notes = []
    if not all(r["completed"] for r in report["rows"]):
        notes.append("some runs did not complete: see the JSON")
    if not all(r["server_agrees"] for r in report["rows"]):
        notes.append("the runs' usage and the server's counts disagree: see the JSON")
    return "\n".join([title, *lines, *notes])


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected agent counts separated by commas, such as 3,10; got {text!r}"
        ) from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"every agent count must be at least 1; got {text!r}")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.cache_bench",
        description="The share of a run's prompt tokens a provider's prompt cache serves.",
    )
    p.add_argument("--agents", type=_sizes, default=[3, 10], metavar="N,N")
    p.add_argument("--repeats", type=positive_int, default=3, metavar="R")
    p.add_argument("--json", default="bench-results/cache_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return measure_and_report(
        args.json, lambda: run_benchmark(args.agents, args.repeats, progress=print), format_table
    )


if __name__ == "__main__":
    raise SystemExit(main())
