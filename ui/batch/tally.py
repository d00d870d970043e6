"""What a batch's results add up to, per variant: the summary row, each task's scores for
the paired comparison, and accuracy per category. Built from a batch's tasks and RESULTS
(``conclave batch``) or from RESULTS files alone (``conclave report``), so both print the
same figures."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from conclave.ui.batch.compare import TaskScores
from conclave.ui.batch.summary import ModeSummary, record_cost, summarise
from conclave.ui.batch.tables import Table

__all__ = [
    "CategoryCell",
    "Slot",
    "VariantTally",
    "category_of",
    "category_rows",
    "category_table",
    "render_categories",
]


@attrs.frozen(kw_only=True)
class Slot:
    """One (task, epoch) of a variant, run or not."""

    task: str
    epoch: int
    category: str | None
    record: Mapping[str, Any] | None
    correct: bool | None


@attrs.frozen(kw_only=True)
class VariantTally:
    name: str
    epochs: int
    slots: tuple[Slot, ...]
    """Task by task, each task's epochs in order."""

    def summary(self) -> ModeSummary:
        return summarise(
            self.name,
            [s.record for s in self.slots],
            [s.correct for s in self.slots],
            epochs=self.epochs,
        )

    def scores(self) -> TaskScores:
        """Each task's mean over its epochs: accuracy over graded runs, cost over runs when
        every one had a price, latency over runs."""
        accuracy: dict[str, float] = {}
        cost: dict[str, float] = {}
        latency: dict[str, float] = {}
        for task, slots in self._by_task().items():
            graded = [s.correct for s in slots if s.correct is not None]
            ran = [s.record for s in slots if s.record is not None]
            if graded:
                accuracy[task] = statistics.fmean(float(g) for g in graded)
            costs = [record_cost(r) for r in ran]
            if costs and all(c is not None for c in costs):
                cost[task] = statistics.fmean(float(c) for c in costs if c is not None)
            if ran:
                latency[task] = statistics.fmean(float(r.get("duration_s", 0.0)) for r in ran)
        return TaskScores(accuracy=accuracy, cost_usd=cost, latency_s=latency)

    def _by_task(self) -> dict[str, list[Slot]]:
        tasks: dict[str, list[Slot]] = {}
        for slot in self.slots:
            tasks.setdefault(slot.task, []).append(slot)
        return tasks


@attrs.frozen(kw_only=True)
class CategoryCell:
    graded: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None


def category_rows(
    tallies: Sequence[VariantTally],
) -> dict[str, dict[str, CategoryCell]]:
    """Category (sorted by name) → variant → its graded and correct runs; empty when no
    task has one."""
    rows: dict[str, dict[str, CategoryCell]] = {}
    for tally in tallies:
        for slot in tally.slots:
            if slot.category is None:
                continue
            row = rows.setdefault(slot.category, {})
            cell = row.get(tally.name, CategoryCell(graded=0, correct=0))
            if slot.correct is not None:
                cell = CategoryCell(graded=cell.graded + 1, correct=cell.correct + slot.correct)
            row[tally.name] = cell
    return {name: rows[name] for name in sorted(rows)}


def category_table(tallies: Sequence[VariantTally], field: str) -> Table | None:
    """Accuracy per category (a column per variant); ``None`` when no task has one."""
    rows = category_rows(tallies)
    if not rows:
        return None

    def cell(c: CategoryCell | None) -> str:
        if c is None or c.accuracy is None:
            return "-"
        return f"{c.accuracy:.1%} ({c.correct}/{c.graded})"

    return Table(
        header=[field, *(t.name for t in tallies)],
        rows=[[name, *(cell(row.get(t.name)) for t in tallies)] for name, row in rows.items()],
    )


def render_categories(tallies: Sequence[VariantTally], field: str) -> str | None:
    """:func:`category_table` as aligned columns."""
    table = category_table(tallies, field)
    return None if table is None else table.aligned()


def category_of(metadata: Mapping[str, Any] | None, field: str) -> str | None:
    if not metadata or metadata.get(field) is None:
        return None
    value = metadata[field]
    return value if isinstance(value, str) else str(value)
