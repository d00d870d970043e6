"""RESULTS.jsonl: one JSON object per finished run, appended as each run ends.

Each line is written with one ``write`` to a file opened ``O_APPEND``, so lines never
interleave and a crash (or a kill) loses at most the line being written. Such a cut line is
the file's last and does not end in a newline: :func:`open_results` finds it, says so, and
truncates the file back to the last whole line before anything is appended. A file that
holds lines but no result is some other file (a tasks file, a typo in ``--out``): it is
refused (:class:`NotResults`), never appended to or cut.

Resume reads every line; for each key (the task's id, the variant and the epoch) the newest
line wins, so
``--retry-failed`` simply appends a new line for a task instead of rewriting the file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from conclave.ui.batch.summary import spent_on
from conclave.ui.text import display_path

__all__ = [
    "NotResults",
    "ResultKey",
    "ResultsFile",
    "open_results",
    "record_key",
    "result_key",
]


ResultKey = tuple[str, str, int]
"""(id, variant, epoch): what one result line is the result of."""


def result_key(id_: Any, variant: str, epoch: int = 1) -> ResultKey:
    return (str(id_), variant, epoch)


def record_key(record: Mapping[str, Any]) -> ResultKey:
    """A line's key; lines written before variants and epochs were recorded name their
    mode, and were the first epoch."""
    variant = record.get("variant", record.get("mode", ""))
    epoch = record.get("epoch", 1)
    return result_key(record["id"], str(variant), epoch if isinstance(epoch, int) else 1)


class NotResults(Exception):
    """``--out`` names a file that holds lines, none of them a result; the message says so."""


@attrs.define
class ResultsFile:
    """Appends result lines; see the module docstring. Close it with :meth:`close`."""

    path: Path
    fd: int
    existing: dict[ResultKey, dict[str, Any]]
    """The newest earlier line for each (id, variant, epoch)."""
    spent_usd: float = 0.0
    """What every line in the file cost, superseded lines included: ``--max-cost`` covers
    the whole batch, across resumes."""
    notes: list[str] = attrs.field(factory=list)
    """What reading found worth saying: a repaired last line, lines that are not results."""

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one line. Raises ``OSError`` (a full disk) with nothing half-written left
        behind but, at worst, a cut last line that the next resume removes."""
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
        written = os.write(self.fd, data)
        while written < len(data):  # a short write: only on a full disk or a signal
            written += os.write(self.fd, data[written:])

    def close(self) -> None:
        os.close(self.fd)


def open_results(path: Path) -> ResultsFile:
    """Open (or create) RESULTS for appending, after reading what it holds and cutting off a
    last line an earlier crash left unfinished. Raises ``OSError`` when it cannot be read,
    repaired or opened, :class:`NotResults` when it is some other file."""
    existing: dict[ResultKey, dict[str, Any]] = {}
    spent = 0.0
    notes: list[str] = []
    shown = display_path(path)
    data = path.read_bytes() if path.exists() else b""
    whole = data.rfind(b"\n") + 1
    foreign = 0
    for number, raw in enumerate(data[:whole].splitlines(), start=1):
        if not raw.strip():
            continue
        record = _object(raw)
        if record is None or "id" not in record or "termination" not in record:
            notes.append(f"{shown}:{number}: not a result line; ignored")
            foreign += 1
            continue
        existing[record_key(record)] = record
        spent += spent_on(record)
    cut = data[whole:]
    if not existing and (foreign or _object(cut) is not None):
        # A line cut mid-write is no JSON; a whole line that is no result is someone's data.
        raise NotResults(
            f"{shown} is not a results file of conclave batch: it holds lines, none of them a "
            "result; pass a new file (or the --out of an earlier batch) to --out"
        )
    if cut:
        notes.append(
            f"{shown}: the last line was cut short ({len(cut):,} bytes, from a run "
            "interrupted while writing); it was removed, and that task runs again"
        )
        os.truncate(path, whole)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    return ResultsFile(path=path, fd=fd, existing=existing, spent_usd=spent, notes=notes)


def _object(raw: bytes) -> dict[str, Any] | None:
    """The JSON object ``raw`` holds, or ``None``."""
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"conclave batch: {note}", file=sys.stderr)
