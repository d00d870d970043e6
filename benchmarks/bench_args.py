"""The flags of ``conclave bench``, and the checks of its paths, kept apart so ``conclave
--help`` imports nothing heavy (the standard library and ``config.atomic_file`` only)."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conclave.config.atomic_file import write_atomically

__all__ = [
    "ReportPathChanged",
    "add_bench_arguments",
    "check_log_root",
    "check_report_path",
    "measure_and_report",
    "positive_int",
    "positive_ints",
    "write_report",
]

_PROBE_BYTES = 64 * 1024
"""Written (and deleted) under --log-root before measuring: a disk too full to take it
would fail every run's event log, minutes in."""


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="a reduced set that runs in under a minute")
    p.add_argument(
        "--scenario",
        action="append",
        choices=("big", "batch", "storm", "http"),
        help="run only this scenario (repeatable; default: big, batch and storm; http runs "
        "the big run on the openai backend against a loopback server)",
    )
    p.add_argument(
        "--json",
        default="bench-results/load_bench.json",
        metavar="PATH",
        help="where the report goes: a new or regular file, replaced whole at the end "
        "(never a directory, a device or a symbolic link)",
    )
    p.add_argument(
        "--log-root",
        default=".conclave/bench",
        metavar="DIR",
        help="where the runs' event logs go while measured (deleted at the end; "
        "default: .conclave/bench, next to a user's own runs)",
    )
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--log-cost", help=argparse.SUPPRESS)
    p.add_argument("--floor", help=argparse.SUPPRESS)


def _not_a_regular_file(path: Path) -> str | None:
    """Why ``path`` must not be replaced by a report, or ``None`` (missing, or regular)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None  # missing, or its directory is: creating it will say what is wrong
    if stat.S_ISLNK(mode):
        return "is a symbolic link, which a report never replaces or writes through"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a device, a pipe or a socket)"
    return None


def _unwritable(directory: Path, probe_bytes: int = 0) -> str | None:
    """Why files cannot be created in ``directory`` (made if missing), or ``None``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory) as probe:
            probe.write(b"\0" * probe_bytes)
            probe.flush()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_report_path(given: str) -> str | None:
    """What is wrong with ``--json PATH``, or ``None``: checked before measuring."""
    if not given.strip():
        return "--json is empty; pass the path of the report file"
    path = Path(given)
    problem = _not_a_regular_file(path)
    if problem:
        return f"--json {path} {problem}; pass the path of a new or regular file"
    problem = _unwritable(path.parent)
    if problem:
        return f"--json: cannot write in {path.parent} ({problem}); choose a writable one"
    return None


def check_log_root(given: str) -> str | None:
    """What is wrong with ``--log-root DIR``, or ``None``: created if missing, and able to
    take a little data (a full disk is refused now, not minutes into measuring)."""
    if not given.strip():
        return "--log-root is empty; pass a directory for the measured runs' event logs"
    root = Path(given)
    if root.exists() and not root.is_dir():
        return f"--log-root {root} is not a directory; choose a writable one"
    problem = _unwritable(root, _PROBE_BYTES)
    if problem:
        return f"--log-root: cannot write in {root} ({problem}); choose a writable one"
    return None


class ReportPathChanged(Exception):
    """The report's path became something a report must not replace while measuring."""


def write_report(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (see
    :func:`~conclave.config.atomic_file.write_atomically`), so a reader sees the old report or
    the new one, never half of one. Raises :class:`ReportPathChanged` if ``path`` has become
    something a report must not replace while the benchmark ran; the ``OSError`` of a full or
    failing disk is raised as is, with the temporary file removed."""
    problem = _not_a_regular_file(path)
    if problem:
        raise ReportPathChanged(
            f"--json {path} {problem}: it changed while measuring, so the report was not "
            "written; the tables above hold the figures"
        )
    write_atomically(path, text)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (counts, repeats, samples)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def positive_ints(text: str) -> list[int]:
    """An argparse type: whole numbers of at least 1, separated by commas (``1,10,100``)."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, like 1,10,100, got {text!r}"
        ) from None
    if any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"expected whole numbers >= 1, got {text!r}")
    return values


def measure_and_report(
    json_path: str,
    measure: Callable[[], dict[str, Any]],
    table: Callable[[dict[str, Any]], str],
    *,
    met: Callable[[dict[str, Any]], bool] = lambda report: True,
) -> int:
    """A benchmark's ``main``: check ``--json`` before measuring (exit 2), measure, print
    the table, write the report atomically (exit 1, saying why, if it cannot be written:
    the table above still holds the figures), and exit 1 when a target is missed."""
    problem = check_report_path(json_path)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    report = measure()
    print(table(report))
    out = Path(json_path)
    try:
        write_report(out, json.dumps(report, indent=2) + "\n")
    except (ReportPathChanged, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"\nwrote {out}")
    return 0 if met(report) else 1
