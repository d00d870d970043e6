"""A headless run's result: the answer and a summary line, or one JSON object."""

from __future__ import annotations

import json
import sys

from actors.run.result import RunResult

__all__ = ["plural", "print_result"]


def print_result(result: RunResult, output_format: str) -> None:
    data = result.to_json()
    if output_format == "json":
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif output_format == "stream-json":
        print(json.dumps({"type": "result", **data}, ensure_ascii=False))
    else:
        if result.final_answer is not None:
            print(result.final_answer)
        summary = (
            f"{result.termination}: winner {result.winner or '-'}, "
            f"{plural(len(result.answers), 'answer')}, {plural(result.llm_calls, 'LLM call')}, "
            f"{plural(result.restarts, 'restart')}, {result.duration_s:.2f}s; "
            f"log {result.log_dir}/events.jsonl"
        )
        print(summary, file=sys.stderr)
        if result.final_answer is None:
            print("conclave: the run produced no answer", file=sys.stderr)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
