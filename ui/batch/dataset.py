"""Reading a dataset: TASKS as JSON Lines (one object a line) or CSV (a header row, then a
row a task), and chat-message inputs.

Both formats come out as numbered rows (the line number an editor shows), each a mapping of
field to value or the reason it is not one; :mod:`ui.batch.tasks` then checks the fields.
A ``.csv`` file is CSV; anything else is JSON Lines. CSV values are text (an empty cell is
no value), and a row's line number is the line it starts on. CSV is comma-separated: a header
that is one column holding ``;`` or a tab is refused as a file using another delimiter.

A chat input is a list of ``{"role", "content"}`` messages, as chat datasets hold them:
``system`` messages (first) become the task's opening instructions, the ``user`` and
``assistant`` messages before the last become earlier turns of the conversation (the run's
history, which agents see as real messages), and the last message, a ``user`` one, is the
task.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from conclave.actors.run.turn import Turn

__all__ = ["chat_task", "read_rows"]

Row = tuple[int, "dict[str, Any] | str"]
"""(line number, the row's fields or why it has none)."""


def read_rows(path: Path) -> Iterator[Row]:
    """Every non-blank row of the file. Raises ``OSError`` when it cannot be read."""
    if path.suffix.lower() == ".csv":
        yield from _csv_rows(path)
    else:
        yield from _jsonl_rows(path)


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
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                yield (
                    number,
                    f"not JSON ({exc.msg} at column {exc.colno}); expected one object per line",
                )
                continue
            if not isinstance(data, dict):
                kind = "a list" if isinstance(data, list) else type(data).__name__
                yield (
                    number,
                    f'expected an object such as {{"id": "q1", "task": "..."}}, got {kind}',
                )
                continue
            yield number, data


def _csv_rows(path: Path) -> Iterator[Row]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        yield 1, f"the file is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        return
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    start = 1
    for row in reader:
        number, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            other = _other_delimiter(header)
            if other is not None:
                reason = (
                    f"the header row is one column, {header[0][:60]!r}: the file seems to use "
                    f"{other} as its delimiter, but a CSV file must be comma-separated (save "
                    "it with commas, or as JSON Lines), so none of its rows were read"
                )
                yield number, reason
                return
            continue
        if len(row) != len(header):
            yield number, f"{len(row)} cells where the header row has {len(header)}"
            continue
        yield number, {k: v for k, v in zip(header, row, strict=True) if k and v != ""}


_OTHER_DELIMITERS = {";": "';'", "\t": "tabs"}


def _other_delimiter(header: list[str]) -> str | None:
    """How a one-column header shows the file is not comma-separated (``id;task``), if it
    does. Not sniffed and used instead: a guess that splits cells wrongly would run every
    task with the wrong text, where refusing costs one re-save."""
    if len(header) != 1:
        return None
    return next((name for mark, name in _OTHER_DELIMITERS.items() if mark in header[0]), None)


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
