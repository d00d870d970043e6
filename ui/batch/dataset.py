"""Reading a dataset: TASKS as JSON Lines (one object a line) or CSV (a header row, then a
row a task), and chat-message inputs.

Both formats come out as numbered rows (the line number an editor shows), each a mapping of
field to value or the reason it is not one; :mod:`ui.batch.tasks` then checks the fields.
A ``.csv`` file is CSV; anything else is JSON Lines. CSV values are text (an empty cell is
no value), and a row's line number is the line it starts on. CSV is comma-separated: a header
that is one column holding ``;`` or a tab is refused as a file using another delimiter. Quotes
must pair up (:data:`csv.reader` with ``strict``): a row with a quoted cell never closed, or
text after a closing quote, is bad, and reading goes on from the line after the one it
started on, so one stray quote does not swallow the rest of the file into one cell.

A file that cannot be a dataset at all (no task in it, another delimiter, not UTF-8) raises
:class:`DatasetError`: the whole file is wrong, not one of its lines.

A chat input is a list of ``{"role", "content"}`` messages, as chat datasets hold them:
``system`` messages (first) become the task's opening instructions, the ``user`` and
``assistant`` messages before the last become earlier turns of the conversation (the run's
history, which agents see as real messages), and the last message, a ``user`` one, is the
task.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from conclave.actors.run.turn import Turn
from conclave.config.limits import MAX_TASK_BYTES

__all__ = ["DatasetError", "chat_task", "read_rows"]

Row = tuple[int, "dict[str, Any] | str"]
"""(line number, the row's fields or why it has none)."""

_DOCS = "(docs/batch.md)"


class DatasetError(Exception):
    """The file as a whole is not a dataset; :meth:`render` says why, naming the file."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line

    def render(self, source: str) -> str:
        where = source if self.line is None else f"{source}:{self.line}:"
        return f"{where} {self.reason}"


def read_rows(path: Path) -> list[Row]:
    """Every non-blank row of the file. Raises ``OSError`` when it cannot be read and
    :class:`DatasetError` when it holds no row at all or is not a dataset."""
    if path.suffix.lower() == ".csv":
        return _csv_rows(path)
    rows = list(_jsonl_rows(path))
    if not rows:
        raise DatasetError(f"holds no task; expected one JSON object per line {_DOCS}")
    return rows


def _jsonl_rows(path: Path) -> Iterator[Row]:
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1} is not UTF-8"
                continue
            try:
                # Without its line ending: a string left open would be "Invalid control
                # character" (the newline) rather than the "Unterminated string" it is.
                data = json.loads(text.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                yield number, f"not JSON ({_json_problem(exc)}); expected one object per line"
                continue
            if not isinstance(data, dict):
                kind = "a list" if isinstance(data, list) else type(data).__name__
                yield (
                    number,
                    f'expected an object such as {{"id": "q1", "task": "..."}}, got {kind}',
                )
                continue
            yield number, data


def _json_problem(exc: json.JSONDecodeError) -> str:
    """What is wrong and where: json's own words, some of which end in "at" already
    ("Invalid control character at"), then the column once."""
    what = re.sub(r"\s+at$", "", exc.msg.strip())
    return f"{what} at column {exc.colno}"


def _csv_rows(path: Path) -> list[Row]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); save it "
            "as UTF-8"
        ) from None
    lines = io.StringIO(text, newline="").readlines()
    header: list[str] | None = None
    rows: list[Row] = []
    read = 0  # the lines before the one the current reader starts on
    with _longest_cell(_CELL_LIMIT):  # a task may be 1 MiB, as in JSON Lines
        while True:
            reader = csv.reader(itertools.islice(lines, read, None), strict=True)
            start = read + 1  # the line the next row starts on
            try:
                for row in reader:
                    number, start = start, read + reader.line_num + 1
                    if not any(cell.strip() for cell in row):
                        continue
                    if header is None:
                        header = [cell.strip() for cell in row]
                        _refuse_other_delimiter(header, number)
                        continue
                    rows.append((number, _fields(header, row)))
            except csv.Error as exc:
                if header is None:
                    raise DatasetError(f"the header row: {_csv_problem(exc)}", line=start) from None
                # Go on from the line after the one the row started on: a quote left open
                # would otherwise make the rest of the file one cell of this row.
                rows.append((start, _csv_problem(exc)))
                read = start
                continue
            break
    if header is None:
        raise DatasetError(
            f"holds no task; expected a header row naming the fields, then one row per task {_DOCS}"
        )
    if not rows:
        raise DatasetError(f"holds only its header row; expected one row per task below it {_DOCS}")
    return rows


_CELL_LIMIT = MAX_TASK_BYTES
"""The longest cell read, in characters: a longer one is no task (1 MiB at most)."""


@contextlib.contextmanager
def _longest_cell(characters: int) -> Iterator[None]:
    """Let the csv module read cells of up to ``characters`` (its own limit, 128 Ki, is
    process-wide and lower than a task's), and put its limit back after."""
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, characters))
    try:
        yield
    finally:
        csv.field_size_limit(limit)


def _fields(header: list[str], row: list[str]) -> dict[str, Any] | str:
    if len(row) != len(header):
        return f"{len(row)} cells where the header row has {len(header)}"
    return {k: v for k, v in zip(header, row, strict=True) if k and v != ""}


def _csv_problem(exc: csv.Error) -> str:
    """What the csv module's error means for the person who wrote the file."""
    said = str(exc)
    if said == "unexpected end of data":
        return (
            "a quoted cell opened on this line is never closed; close it, and write a quote "
            'inside a quoted cell as two ("")'
        )
    if said.startswith("',' expected after"):
        return (
            "a quoted cell's closing quote is followed by text, not a comma; write a quote "
            'inside a quoted cell as two ("")'
        )
    if said.startswith("field larger than field limit"):
        return f"a cell is longer than {_CELL_LIMIT:,} characters (a task is at most 1 MiB)"
    return f"not CSV ({said})"


_OTHER_DELIMITERS = {";": "';'", "\t": "tabs"}


def _refuse_other_delimiter(header: list[str], line: int) -> None:
    """Raise :class:`DatasetError` when a one-column header shows the file is not
    comma-separated (``id;task``). Not sniffed and used instead: a guess that splits cells
    wrongly would run every task with the wrong text, where refusing costs one re-save."""
    if len(header) != 1:
        return
    other = next((name for mark, name in _OTHER_DELIMITERS.items() if mark in header[0]), None)
    if other is not None:
        raise DatasetError(
            f"the header row is one column, {header[0][:60]!r}: the file seems to use {other} "
            "as its delimiter, but a CSV file must be comma-separated; save it with commas, "
            "or as JSON Lines (nothing ran)",
            line=line,
        )


def chat_task(messages: Any) -> tuple[str, tuple[Turn, ...]]:
    """The task and the earlier turns of a chat input; ``ValueError`` says what is wrong."""
    if not isinstance(messages, list) or not messages:
        raise ValueError('a chat input is a non-empty list of {"role", "content"} messages')
    system: list[str] = []
    turns: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        if (
            not isinstance(message, Mapping)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str)
        ):
            raise ValueError(f'message {index}: expected {{"role": ..., "content": "text"}}')
        role, content = message["role"], message["content"]
        if role == "system":
            if turns:
                raise ValueError(f"message {index}: system messages come first")
            system.append(content)
            continue
        expected = "user" if len(turns) % 2 == 0 else "assistant"
        if role != expected:
            raise ValueError(
                f"message {index}: expected {'a user' if expected == 'user' else 'an assistant'} "
                f"message, got {role!r} (user and "
                "assistant take turns, the last is user)"
            )
        turns.append((role, content))
    if not turns or turns[-1][0] != "user":
        raise ValueError("the last message must be the user's: it is the task")
    history = tuple(
        Turn(task=turns[i][1], final_answer=turns[i + 1][1]) for i in range(0, len(turns) - 1, 2)
    )
    task = "\n\n".join([*system, turns[-1][1]])
    return task, history
