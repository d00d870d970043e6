"""Comparing variants on the same tasks: pass@k over epochs, and paired differences with
bootstrap confidence intervals.

Paired, because every variant ran the same tasks: the difference is taken task by task
(the variant's score on a task minus the baseline's), so how hard each task is cancels
out, and the interval is over the tasks, resampled with replacement. A task counts in a
pair only when both variants have a value for it (graded, priced, run).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from conclave.ui.batch.tables import Table

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "Estimate",
    "PairedRow",
    "TaskScores",
    "bootstrap_ci",
    "paired_rows",
    "paired_table",
    "pass_at_k",
    "render_paired",
]

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
_SEED = 20240601
"""Fixed, so the same results print the same intervals."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` runs drawn from ``n`` (``c`` of them correct)
    is correct: the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = _SEED
) -> tuple[float, float]:
    """The percentile bootstrap interval (:data:`CONFIDENCE`) of the mean of ``values``."""
    if not values:
        raise ValueError("a bootstrap interval needs at least one value")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - CONFIDENCE) / 2
    low = means[max(0, math.floor(tail * resamples))]
    high = means[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)]
    return low, high


@attrs.frozen(kw_only=True)
class TaskScores:
    """One variant's per-task figures (task key → value), each the mean over its epochs."""

    accuracy: Mapping[str, float]
    cost_usd: Mapping[str, float]
    latency_s: Mapping[str, float]


@attrs.frozen(kw_only=True)
class Estimate:
    tasks: int
    """The tasks both variants have a value for."""
    mean: float
    low: float
    high: float

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class PairedRow:
    """``variant`` minus ``baseline``, per task, averaged; ``None`` without common tasks."""

    variant: str
    baseline: str
    accuracy: Estimate | None
    cost_usd: Estimate | None
    latency_s: Estimate | None

    def to_json(self) -> dict[str, Any]:
        def part(e: Estimate | None) -> dict[str, Any] | None:
            return None if e is None else e.to_json()

        return {
            "variant": self.variant,
            "baseline": self.baseline,
            "accuracy": part(self.accuracy),
            "cost_usd": part(self.cost_usd),
            "latency_s": part(self.latency_s),
        }


def _paired(a: Mapping[str, float], b: Mapping[str, float]) -> Estimate | None:
    common = [key for key in a if key in b]
    if not common:
        return None
    diffs = [b[key] - a[key] for key in common]
    low, high = bootstrap_ci(diffs)
    return Estimate(tasks=len(common), mean=statistics.fmean(diffs), low=low, high=high)


def paired_rows(scores: Mapping[str, TaskScores]) -> list[PairedRow]:
    """Each variant after the first against the first (the baseline), in order."""
    names = list(scores)
    if len(names) < 2:
        return []
    base = scores[names[0]]
    return [
        PairedRow(
            variant=name,
            baseline=names[0],
            accuracy=_paired(base.accuracy, scores[name].accuracy),
            cost_usd=_paired(base.cost_usd, scores[name].cost_usd),
            latency_s=_paired(base.latency_s, scores[name].latency_s),
        )
        for name in names[1:]
    ]


def _signed(value: float, decimals: int, unit: str) -> str:
    """``value`` with its sign (``+0.25s``, ``-1.5 pts``); one that rounds to zero has none
    (``0.00s``, never ``-0.00s``: a difference too small to show is no direction)."""
    text = f"{value:+.{decimals}f}"
    if float(text) == 0:
        text = text[1:]
    return text + unit


def _cell(estimate: Estimate | None, decimals: int, unit: str) -> tuple[str, str]:
    if estimate is None:
        return "-", "-"
    low, high = _signed(estimate.low, decimals, unit), _signed(estimate.high, decimals, unit)
    return _signed(estimate.mean, decimals, unit), f"[{low}, {high}]"


def paired_table(rows: Sequence[PairedRow]) -> Table:
    """The paired differences, one row per variant against the baseline."""
    header = ["vs " + rows[0].baseline, "tasks", "accuracy Δ", "95% CI", "cost Δ/task",
              "95% CI", "latency Δ", "95% CI"]  # fmt: skip
    cells = []
    for row in rows:
        tasks = row.accuracy.tasks if row.accuracy is not None else 0
        cells.append(
            [
                row.variant,
                f"{tasks:,}",
                *_cell(_points(row.accuracy), 1, " pts"),
                *_cell(row.cost_usd, 4, "$"),
                *_cell(row.latency_s, 2, "s"),
            ]
        )
    return Table(header=header, rows=cells)


def render_paired(rows: Sequence[PairedRow]) -> str:
    """:func:`paired_table` as aligned columns."""
    return paired_table(rows).aligned()


def _points(estimate: Estimate | None) -> Estimate | None:
    """An accuracy difference in percentage points."""
    if estimate is None:
        return None
    return attrs.evolve(
        estimate, mean=estimate.mean * 100, low=estimate.low * 100, high=estimate.high * 100
    )
