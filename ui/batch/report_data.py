"""What ``conclave report`` reads: one or more RESULTS files, on their own (no tasks file,
no config: every line carries its provenance and its grade).

In each file the newest line of every (id, variant, epoch) wins, as on resume. A variant
name found in more than one file is prefixed with its file's name (``a:multi``,
``b:multi``), so two batches' results can be set side by side. Variants are listed in the
order their first runs started (the first is the paired baseline), tasks in the order of
their lines in TASKS. The grade is the one the line recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from conclave.ui.batch.results import ResultKey, record_key
from conclave.ui.batch.tally import Slot, VariantTally, category_of

__all__ = ["ReportData", "Sample", "load_results"]


@attrs.frozen(kw_only=True)
class Sample:
    """One run for the per-sample viewer."""

    variant: str
    record: Mapping[str, Any]
    log: str | None
    """Its event log (``events.jsonl`` under the run's ``log_dir``) when it is on this
    machine: the path as found."""


@attrs.frozen(kw_only=True)
class ReportData:
    tallies: list[VariantTally]
    samples: list[Sample]
    notes: list[str]
    """Lines that were not results, files that held none."""


def _read(path: Path, notes: list[str]) -> dict[ResultKey, dict[str, Any]]:
    """The newest line of every key in one file (``OSError`` when it cannot be read)."""
    newest: dict[ResultKey, dict[str, Any]] = {}
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                record = None
            if not isinstance(record, dict) or "id" not in record or "termination" not in record:
                notes.append(f"{path}:{number}: not a result line; ignored")
                continue
            newest[record_key(record)] = record
    if not newest:
        notes.append(f"{path}: holds no results")
    return newest


def _event_log(record: Mapping[str, Any], base: Path) -> str | None:
    log_dir = record.get("log_dir")
    if not isinstance(log_dir, str):
        return None
    for root in (Path(log_dir), base / log_dir):
        events = root / "events.jsonl"
        if events.is_file():
            return str(events)
    return None


def _first_start(records: Iterable[Mapping[str, Any]]) -> str:
    """When the first of ``records`` started (ISO 8601 sorts as text): a batch starts its
    variants in the order it was given them, so the report lists them (and picks the
    paired baseline) in that order."""
    return min((str(r.get("started_at", "")) for r in records), default="")


def load_results(paths: Sequence[Path], category_field: str) -> ReportData:
    """Every file's results as tallies (one per variant) and samples. Raises ``OSError``
    naming a file that cannot be read."""
    notes: list[str] = []
    per_file = [(path, _read(path, notes)) for path in paths]
    owners: dict[str, set[Path]] = {}
    for path, records in per_file:
        for _, variant, _ in records:
            owners.setdefault(variant, set()).add(path)
    rows: dict[str, dict[tuple[str, int], Mapping[str, Any]]] = {}
    tasks: dict[str, str | None] = {}
    samples: list[Sample] = []
    epochs = 1
    for path, records in per_file:
        for (task, variant, epoch), record in records.items():
            name = f"{path.stem}:{variant}" if len(owners[variant]) > 1 else variant
            rows.setdefault(name, {})[task, epoch] = record
            metadata = record.get("metadata")
            category = category_of(metadata if isinstance(metadata, dict) else None, category_field)
            tasks.setdefault(task, category)
            epochs = max(epochs, epoch)
            samples.append(Sample(variant=name, record=record, log=_event_log(record, path.parent)))
    rows = dict(sorted(rows.items(), key=lambda item: _first_start(item[1].values())))
    lines: dict[str, int] = {}
    for by_slot in rows.values():
        for (task, _), written in by_slot.items():
            line = written.get("line")
            if isinstance(line, int):
                lines[task] = min(line, lines.get(task, line))
    tasks = dict(sorted(tasks.items(), key=lambda item: lines.get(item[0], 0)))
    tallies = []
    for name, by_slot in rows.items():
        slots = []
        for task, category in tasks.items():
            for epoch in range(1, epochs + 1):
                found = by_slot.get((task, epoch))
                correct = None if found is None else found.get("correct")
                slots.append(
                    Slot(
                        task=task,
                        epoch=epoch,
                        category=category,
                        record=found,
                        correct=correct if isinstance(correct, bool) else None,
                    )
                )
        tallies.append(VariantTally(name=name, epochs=epochs, slots=tuple(slots)))
    order = {name: i for i, name in enumerate(rows)}
    position = {task: i for i, task in enumerate(tasks)}
    samples.sort(
        key=lambda s: (order[s.variant], position[str(s.record["id"])], s.record.get("epoch", 1))
    )
    return ReportData(tallies=tallies, samples=samples, notes=notes)
