"""A headless run's result: the answer and a summary line, or one JSON object.

Every field of the JSON result, and the error object printed instead when there is no
result, are documented in docs/exit-codes.md.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from conclave.actors.planning.plan import render_plan
from conclave.actors.run.result import DecidedBy, RunResult
from conclave.actors.workspace.writes import WRITES_FILE, footer

if TYPE_CHECKING:
    from conclave.ui.headless.plan_output import PlannedResult

__all__ = [
    "display_path",
    "error_object",
    "plural",
    "print_json_error",
    "print_result",
    "summary",
    "writes_footer",
]


def print_result(
    result: RunResult,
    output_format: str,
    *,
    out: TextIO | None = None,
    planned: PlannedResult | None = None,
) -> None:
    """Print the result on ``out`` (stdout) and, for ``text``, the summary on stderr. Raises
    the ``OSError`` of a failing stdout, for the caller to report. A plan-mode run
    (``planned``) shows its plan rendered, and adds the plan fields to the JSON."""
    out = sys.stdout if out is None else out
    data = result.to_json()
    answer = result.final_answer
    if planned is not None:
        data |= planned.fields()
        if planned.plan is not None:
            answer = render_plan(planned.plan)
    if output_format == "json":
        out.write(_dumps(data, indent=2) + "\n")
    elif output_format == "stream-json":
        pass  # the stream's renderer writes its ``result`` line: ui/headless/progress.py
    else:
        if answer is not None:
            out.write(answer + "\n")
        # On stderr, so stdout stays the bare answer (a pipe gets only the answer).
        written = writes_footer(result)
        if written is not None:
            print(written, file=sys.stderr)
        print(summary(result), file=sys.stderr)
        if result.final_answer is None:
            print("conclave: the run produced no answer", file=sys.stderr)
    out.flush()


_DECIDED = {
    DecidedBy.VOTES: "decided by votes",
    DecidedBy.NO_VOTES: "decided without votes",
    DecidedBy.OVERRIDE: "chosen by override",
    DecidedBy.TIMEOUT_BEST_SO_FAR: "best answer so far at the timeout",
    DecidedBy.MAX_COST_BEST_SO_FAR: "best answer so far at the cost limit",
    DecidedBy.CANCELLED_BEST_SO_FAR: "best answer so far when cancelled",
    DecidedBy.FAILED_BEST_SO_FAR: "best answer so far when the run failed",
}


def writes_footer(result: RunResult) -> str | None:
    """The lines naming what the run wrote to its writable context paths (see
    :func:`actors.workspace.writes.footer`); ``None`` when it wrote nothing."""
    log_dir = result.log_dir
    list_file = Path(log_dir) / WRITES_FILE if log_dir is not None else None
    if list_file is not None and not list_file.is_file():
        list_file = None  # it could not be written: name no file that is not there
    text = footer(result.writes, list_file)
    return None if text is None else display_path(text)


def summary(result: RunResult) -> str:
    """One line, however many agents ran: counts, never lists."""
    decided = _DECIDED.get(result.decided_by, "no answer") if result.decided_by else "no answer"
    line = (
        f"{result.termination}: winner {result.winner or '-'} ({decided}); "
        f"{plural(len(result.answers), 'answer')}, {len(result.failed_agents):,} excluded, "
        f"{plural(result.llm_calls, 'LLM call')}, {plural(result.restarts, 'restart')}, "
        f"{result.duration_s:.2f}s"
    )
    if result.cost_usd is not None and result.usage.total.calls:
        line += f", ${result.cost_usd:.4f}"
    if result.failure_reason:
        line += f"; failed: {_one_line(result.failure_reason)}"
    if result.log_dir is not None:
        line += f"; log {display_path(os.path.join(result.log_dir, 'events.jsonl'))}"
    if result.workspace_path is not None:
        line += f"; workspace {display_path(result.workspace_path)}"
    return line


def error_object(message: str, code: int) -> dict[str, Any]:
    """What ``--output-format json`` prints when there is no result to print."""
    return {"error": message, "exit_code": int(code)}


def print_json_error(message: str, code: int, *, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out
    out.write(_dumps(error_object(message, code), indent=2) + "\n")
    out.flush()


def _dumps(data: Any, *, indent: int | None = None) -> str:
    """JSON that any stdout can take: a lone surrogate (a path's undecodable byte) is
    escaped rather than crashing the encoder of a UTF-8 stream."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, indent=indent)
    return text


def display_path(path: str | os.PathLike[str]) -> str:
    """A path as text any terminal takes: a byte that is not UTF-8 shown as ``\\xNN``."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")


def _one_line(text: str, width: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
