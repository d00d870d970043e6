"""One run's result in a line of text, and what it wrote: the headless run prints them on
stderr, the REPL under each answer."""

from __future__ import annotations

import os
from pathlib import Path

from conclave.actors.run.result import DecidedBy, RunResult
from conclave.actors.run.termination import Termination
from conclave.actors.workspace.write_diff import DIFF_FILE
from conclave.actors.workspace.writes import WRITES_FILE, footer
from conclave.config.wording import plural
from conclave.ui.text import display_path

__all__ = ["summary", "writes_footer"]

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
    text = footer(result.writes, _written(log_dir, WRITES_FILE), _written(log_dir, DIFF_FILE))
    return None if text is None else display_path(text)


def _written(log_dir: str | None, name: str) -> Path | None:
    """``name`` in the log dir, if it is there (it may not have been written: a footer names
    no file that is not there)."""
    path = Path(log_dir) / name if log_dir is not None else None
    return path if path is not None and path.is_file() else None


def summary(result: RunResult) -> str:
    """One line, however many agents ran: counts, never lists."""
    decided = _DECIDED.get(result.decided_by, "no answer") if result.decided_by else "no answer"
    winner = result.winner
    if result.decided_by is DecidedBy.OVERRIDE and result.presenter not in (None, winner):
        # the person's choice is the answer; the vote's winner is what it overrode
        decided += f" of the vote's winner {winner}"
        winner = result.presenter
    line = (
        f"{result.termination}: winner {winner or '-'} ({decided}); "
        f"{plural(len(result.answers), 'answer')}, {len(result.failed_agents):,} excluded, "
        f"{plural(result.llm_calls, 'LLM call')}, {plural(result.restarts, 'restart')}, "
        f"{result.duration_s:.2f}s"
    )
    if result.cost_usd is not None and result.usage.total.calls:
        line += f", ${result.cost_usd:.4f}"
    total = result.usage.total
    if total.cache_read_tokens and total.cached_share is not None:
        line += f", {total.cached_share:.0%} of prompt tokens cached"
    if result.failure_reason:
        line += f"; failed: {_one_line(result.failure_reason)}"
    unmetered = result.usage.total.calls_without_usage
    if result.termination is Termination.MAX_COST and unmetered:
        line += (
            f"; the cost limit counted {plural(unmetered, 'call')} whose server reported no "
            "usage at an estimate"
        )
    if result.presentation_error:
        line += (
            "; the presentation failed, the winning answer stands verbatim: "
            f"{_one_line(result.presentation_error)}"
        )
    if result.log_dir is not None:
        line += f"; log {display_path(os.path.join(result.log_dir, 'events.jsonl'))}"
    if result.workspace_path is not None:
        line += f"; workspace {display_path(result.workspace_path)}"
    return line


def _one_line(text: str, width: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
