"""The flags of ``conclave bench``, kept apart so ``conclave --help`` imports nothing heavy."""

from __future__ import annotations

import argparse

__all__ = ["add_bench_arguments"]


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="a reduced set that runs in under a minute")
    p.add_argument(
        "--scenario",
        action="append",
        choices=("big", "batch", "storm"),
        help="run only this scenario (repeatable; default: all)",
    )
    p.add_argument("--json", default="bench-results/load_bench.json", metavar="PATH")
    p.add_argument(
        "--log-root",
        default=".conclave/bench",
        metavar="DIR",
        help="where the runs' event logs go while measured (deleted at the end; "
        "default: .conclave/bench, next to a user's own runs)",
    )
    p.add_argument("--case", help=argparse.SUPPRESS)
