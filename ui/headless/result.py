"""A headless run's result: the answer and a summary line, or one JSON object.

Every field of the JSON result, and the error object printed instead when there is no
result, are documented in docs/exit-codes.md.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from conclave.actors.planning.plan import render_plan
from conclave.actors.run.result import RunResult
from conclave.ui.streams import write_stdout
from conclave.ui.summary import summary, writes_footer

if TYPE_CHECKING:
    from conclave.ui.headless.plan_output import PlannedResult

__all__ = ["error_object", "print_json_error", "print_result"]


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
        pass  # the stream's renderer writes its ``result`` line: ui/progress.py
    else:
        if answer is not None:
            out.write(answer + "\n")
        # On stderr, so stdout stays the bare answer (a pipe gets only the answer).
        written = writes_footer(result)
        if written is not None:
            print(written, file=sys.stderr)
        for assumed in result.assumptions:
            print(
                f"conclave: assumed ({assumed.agent}): {assumed.question} -> {assumed.assumption}",
                file=sys.stderr,
            )
        print(summary(result), file=sys.stderr)
        if result.final_answer is None and result.pending_question is None:
            print("conclave: the run produced no answer", file=sys.stderr)
    out.flush()


def error_object(message: str, code: int) -> dict[str, Any]:
    """What ``--output-format json`` prints when there is no result to print."""
    return {"error": message, "exit_code": int(code)}


def print_json_error(message: str, code: int) -> None:
    """The error object on stdout, for ``--output-format json``. A stdout that cannot take
    it (closed, full, its reader gone) is let be, as :func:`ui.entry.report` does: the
    message is on stderr already, and the exit code ``code`` says the rest."""
    write_stdout(_dumps(error_object(message, code), indent=2))


def _dumps(data: Any, *, indent: int | None = None) -> str:
    """JSON that any stdout can take: a lone surrogate (a path's undecodable byte) is
    escaped rather than crashing the encoder of a UTF-8 stream."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, indent=indent)
    return text
