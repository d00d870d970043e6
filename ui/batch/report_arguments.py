"""``conclave report``'s flags. Only argparse here (``conclave --help`` stays fast)."""

from __future__ import annotations

import argparse

__all__ = ["add_report_arguments"]


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results", nargs="+", metavar="RESULTS.jsonl", help="results of conclave batch --out"
    )
    p.add_argument(
        "--html", metavar="REPORT.html", help="also write one self-contained HTML report here"
    )
    p.add_argument(
        "--category-field",
        default="category",
        metavar="KEY",
        help="the task metadata key whose value groups results by category (category)",
    )
