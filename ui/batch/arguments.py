"""``conclave batch``'s flags. Only argparse here (``conclave --help`` stays fast). The flags
that shape each run are the shared run flags (:func:`config.flags.add_run_flags`), as
``conclave run`` takes them; ``--max-cost`` and ``--log-dir`` mean the batch's."""

from __future__ import annotations

import argparse

from conclave.config.flags import add_run_flags, dollars

__all__ = ["ENGINES", "add_batch_arguments", "positive_count", "tolerance"]

ENGINES = ("local", "ray")


def positive_count(text: str) -> int:
    expected = "a whole number >= 1 and <= 100,000"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def failure_limit_text(text: str) -> str:
    """``--max-failures``: ``N`` (a whole number >= 1) or ``P%`` (more than 0, at most 100);
    :func:`ui.batch.failures.failure_limit` reads it (attrs is not imported for ``--help``)."""
    expected = "a number of runs such as 20, or a share such as 50%"
    try:
        if text.endswith("%"):
            if not 0 < float(text[:-1]) <= 100:
                raise ValueError
        elif int(text) < 1:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    return text


def retry_count(text: str) -> int:
    expected = "a whole number from 0 to 100"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def tolerance(text: str) -> float:
    expected = "a number >= 0, such as 0.01"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def add_batch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "tasks",
        metavar="TASKS",
        help='JSON Lines, one task per line ({"id", "task", "expected"?, ...}), or a .csv '
        "file with a header row",
    )
    p.add_argument(
        "--out",
        metavar="RESULTS.jsonl",
        help="results are appended here, one JSON object per finished run; running again "
        "skips the tasks it already holds (required unless --dry-run)",
    )
    p.add_argument(
        "--input-field",
        default="task",
        metavar="KEY",
        help="the field of each line (or CSV column) holding the task: text or chat "
        "messages (task)",
    )
    p.add_argument(
        "--target-field",
        default="expected",
        metavar="KEY",
        help="the field holding the expected answer (expected)",
    )
    p.add_argument(
        "--id-field",
        metavar="KEY",
        help="the field holding the task's id (id; a dataset with no id at all is numbered: "
        "line-7)",
    )
    p.add_argument(
        "--concurrency", type=positive_count, default=8, metavar="N", help="runs at once (8)"
    )
    p.add_argument(
        "--workers",
        type=positive_count,
        default=1,
        metavar="N",
        help="worker processes sharing the runs (1: all in this process); use the cores",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where the runs execute: local (this machine) or ray (Ray actors on a cluster; "
        "pip install -e '.[ray]')",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="--engine ray: the cluster's address, HOST:PORT (default: RAY_ADDRESS, else a "
        "local cluster started for the batch)",
    )
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="also run again the tasks whose newest result did not complete",
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="reuse recorded replies to identical requests (kept in DIR): a re-run is "
        "reproducible and free (off by default)",
    )
    p.add_argument(
        "--retries",
        type=retry_count,
        default=0,
        metavar="N",
        help="run a run that fails again, up to N more times, before writing it (0)",
    )
    p.add_argument(
        "--max-failures",
        type=failure_limit_text,
        metavar="N|P%",
        help="stop starting runs once N runs (or P%% of at least 10) have failed",
    )
    p.add_argument(
        "--rerun-changed",
        action="store_true",
        help="run again the results RESULTS holds that were made with another config",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="keep the results RESULTS holds that were made with another config",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="check every line (and its overrides), then exit"
    )
    p.add_argument(
        "--max-cost",
        type=dollars,
        metavar="USD",
        help="for the whole batch: start no more runs once this much is spent (the runs in "
        "flight finish)",
    )
    p.add_argument(
        "--grade",
        metavar="GRADER",
        help="score answers against each line's expected: exact, normalised, contains, regex, "
        "number, json:FIELD, model (with --judge) or MODULE:FUNCTION",
    )
    p.add_argument(
        "--extract",
        metavar="HOW",
        help="grade only part of each answer: last-line, regex:PATTERN or json:FIELD",
    )
    p.add_argument(
        "--judge", metavar="JUDGE.yaml", help="--grade model: the config whose runs grade"
    )
    p.add_argument(
        "--rubric",
        metavar="TEXT",
        help="--grade model: what makes an answer correct (@PATH reads it from a file)",
    )
    p.add_argument(
        "--tolerance",
        type=tolerance,
        metavar="X",
        help="--grade number or json:FIELD: how far from expected a number may be (1e-6)",
    )
    p.add_argument(
        "--compare-modes",
        metavar="MODE,MODE",
        help="run every task in each mode (single, multi, single-norefine, multi-norefine) "
        "and compare them side by side",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="CONFIG.yaml",
        help="run every task with each of these configs and compare them (paired "
        "differences with 95%% bootstrap intervals against the first)",
    )
    p.add_argument(
        "--epochs",
        type=positive_count,
        default=1,
        metavar="K",
        help="run each task K times in each variant; adds pass@1 and pass@K (1)",
    )
    p.add_argument(
        "--category-field",
        default="category",
        metavar="KEY",
        help="the task metadata key whose value groups results by category (category)",
    )
    p.add_argument(
        "--summary-json", metavar="PATH", help="also write the summary as JSON to this file"
    )
    p.add_argument(
        "--log-dir",
        metavar="DIR",
        help="keep each run's event log under DIR/<id>-<mode>-<random>/ (default: no logs)",
    )
    add_run_flags(
        p,
        help={
            "mode": "the collaboration mode of every run",
            "timeout": "per task: a run's whole-run timeout",
        },
    )
