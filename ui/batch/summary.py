"""The summary table ``conclave batch`` (and ``conclave report``) prints: one row per
variant, so that with ``--compare`` or ``--compare-modes`` the configs or modes stand side by
side (accuracy, cost and time). With ``--epochs K`` the counts are over runs (tasks times K),
and pass@1 and pass@K are added."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from conclave.config.wording import usd
from conclave.ui.batch.compare import pass_at_k
from conclave.ui.batch.tables import Table

__all__ = [
    "ModeSummary",
    "record_cost",
    "render_table",
    "spent_on",
    "summarise",
    "summary_table",
]

_TIMED_OUT = ("timeout", "max_cost")


@attrs.frozen(kw_only=True)
class ModeSummary:
    mode: str
    tasks: int
    completed: int
    failed: int
    timed_out: int
    not_run: int
    tokens: int | None
    """``None`` when some run's servers reported no usage."""
    cost_usd: float | None
    """``None`` unless every run had a price (a partial sum would read as the cost)."""
    p50_s: float | None
    p95_s: float | None
    graded: int
    correct: int
    epochs: int = 1
    pass_at_1: float | None = None
    """Mean over tasks of the share of its graded runs that were correct."""
    pass_at_k: float | None = None
    """k = ``epochs``: mean over the tasks graded in every epoch of the unbiased pass@k."""

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self) | {"accuracy": self.accuracy}


def record_cost(record: Mapping[str, Any]) -> float | None:
    """What a result cost: its run, and its judge's runs when it was model-graded;
    ``None`` when one of them had no price."""
    costs = [record.get("cost_usd")]
    if "judge" in record:
        costs.append(record.get("grade_cost_usd"))
    if any(c is None for c in costs):
        return None
    return sum(float(c) for c in costs if c is not None)


def spent_on(record: Mapping[str, Any]) -> float:
    """The priced part of :func:`record_cost`: what ``--max-cost`` counts."""
    return sum(
        float(c)
        for c in (record.get("cost_usd"), record.get("grade_cost_usd"))
        if isinstance(c, int | float) and not isinstance(c, bool)
    )


def _tokens(ran: Sequence[Mapping[str, Any]]) -> int | None:
    counts = [(r.get("input_tokens", 0), r.get("output_tokens", 0)) for r in ran]
    if any(n is None for pair in counts for n in pair):
        return None
    return sum(int(i) + int(o) for i, o in counts)


def _percentile(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered) + 0.5) - 1))]


def summarise(
    mode: str,
    records: Sequence[Mapping[str, Any] | None],
    grades: Sequence[bool | None],
    *,
    epochs: int = 1,
) -> ModeSummary:
    """``records``: the newest result of each task in this variant, ``epochs`` consecutive
    ones per task (``None``: not run); ``grades``: whether each was correct (``None``: not
    graded)."""
    ran = [r for r in records if r is not None]
    costs = [record_cost(r) for r in ran]
    known = bool(costs) and all(c is not None for c in costs)
    durations = [float(r.get("duration_s", 0.0)) for r in ran]
    graded: list[bool] = [g for g in grades if g is not None]
    return ModeSummary(
        mode=mode,
        tasks=len(records) // epochs,
        completed=sum(r.get("termination") == "completed" for r in ran),
        failed=sum(r.get("termination") == "failed" for r in ran),
        timed_out=sum(r.get("termination") in _TIMED_OUT for r in ran),
        not_run=len(records) - len(ran),
        tokens=_tokens(ran),
        cost_usd=round(sum(float(c) for c in costs if c is not None), 6) if known else None,
        p50_s=_percentile(durations, 0.5),
        p95_s=_percentile(durations, 0.95),
        graded=len(graded),
        correct=sum(graded),
        epochs=epochs,
        **_pass_rates(grades, epochs),
    )


def _pass_rates(grades: Sequence[bool | None], epochs: int) -> dict[str, float | None]:
    per_task = [
        [g for g in grades[i : i + epochs] if g is not None] for i in range(0, len(grades), epochs)
    ]
    shares = [sum(t) / len(t) for t in per_task if t]
    full = [pass_at_k(epochs, sum(t), epochs) for t in per_task if len(t) == epochs]
    return {
        "pass_at_1": sum(shares) / len(shares) if shares else None,
        "pass_at_k": sum(full) / len(full) if full else None,
    }


_COLUMNS = (
    "mode", "tasks", "completed", "failed", "timed out", "not run", "tokens", "cost",
    "p50", "p95", "accuracy",
)  # fmt: skip


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def summary_table(rows: Sequence[ModeSummary], *, first: str = "mode") -> Table:
    """The figures; ``first`` heads the column naming the variants (``mode``, ``config``)."""
    epochs = max((row.epochs for row in rows), default=1)
    columns = [first, *_COLUMNS[1:]]
    if epochs > 1:
        columns[1] = "runs"
        columns += ["pass@1", f"pass@{epochs}"]
    cells = [
        [
            row.mode,
            f"{row.tasks * row.epochs:,}",
            f"{row.completed:,}",
            f"{row.failed:,}",
            f"{row.timed_out:,}",
            f"{row.not_run:,}",
            "unknown" if row.tokens is None else f"{row.tokens:,}",
            usd(row.cost_usd),
            "-" if row.p50_s is None else f"{row.p50_s:.2f}s",
            "-" if row.p95_s is None else f"{row.p95_s:.2f}s",
            "-" if row.accuracy is None else f"{row.accuracy:.1%} ({row.correct}/{row.graded})",
            *([_share(row.pass_at_1), _share(row.pass_at_k)] if epochs > 1 else []),
        ]
        for row in rows
    ]
    return Table(header=columns, rows=cells)


def render_table(rows: Sequence[ModeSummary], *, first: str = "mode") -> str:
    """:func:`summary_table` as aligned columns."""
    return summary_table(rows, first=first).aligned()
