"""``conclave run``'s own input: the task (the argument or stdin). The flags every front
end shares resolve in :mod:`config.resolver`, the log directory in :mod:`ui.log_dir`.

Text that is not UTF-8 (documented in docs/exit-codes.md):

- a task (the argument, whose bad bytes Python keeps as surrogates, or stdin's bytes) is
  decoded with each bad byte replaced by U+FFFD, and stderr names the first one: a task is
  prose for a model, which reads past a replaced character, and refusing it would fail a
  run over what may be one stray byte;
- a config file is refused (exit 2) naming the byte's position (:mod:`config.loader`).
"""

from __future__ import annotations

import argparse
import sys

from conclave.config.limits import MAX_TASK_BYTES
from conclave.config.resolver import UsageError

__all__ = ["EmptyStdin", "decode_task", "resolve_task"]


class EmptyStdin(Exception):
    """Print mode (no task argument, stdin not a terminal) found nothing on stdin: the
    pipe that should carry the task carried none (exit 1, not a usage error: the command
    line was right, its input was not)."""

    def __init__(self) -> None:
        super().__init__(
            "Error: stdin was empty; pipe a task into it (echo TASK | conclave), "
            "or pass the task as an argument"
        )


def resolve_task(args: argparse.Namespace) -> str:
    """The task from the argument or, without one, from stdin (when stdin is not a terminal:
    print mode; an empty or blank stdin raises :class:`EmptyStdin`)."""
    raw: bytes | None = None
    if args.task is not None:
        raw = _argument_bytes(args.task)
    elif sys.stdin is not None and not sys.stdin.isatty():
        raw = _read_stdin()
        if not raw.strip():
            raise EmptyStdin
    if raw is not None and len(raw) > MAX_TASK_BYTES:
        raise UsageError(
            f"the task is larger than {MAX_TASK_BYTES // 1_048_576} MiB; "
            "pass a shorter task (a file's path or an excerpt, not the whole file)"
        )
    task = decode_task(raw) if raw is not None else None
    if task is None or not task.strip():
        raise UsageError("no task given: pass TASK, use -p TASK, or pipe it on stdin")
    return task.strip()


def _argument_bytes(task: str) -> bytes:
    """The bytes the user typed: Python decodes argv with ``surrogateescape``, keeping each
    byte that is not UTF-8 as a lone surrogate (``surrogatepass`` covers a str from code)."""
    try:
        return task.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return task.encode("utf-8", "surrogatepass")


def _read_stdin() -> bytes:
    """At most one byte more than a task may hold, so ``< /dev/zero`` cannot fill memory."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # replaced by a text-only stream (tests, embedding)
        return str(sys.stdin.read(MAX_TASK_BYTES + 1)).encode("utf-8", "surrogateescape")
    data: bytes = buffer.read(MAX_TASK_BYTES + 1)
    return data


def decode_task(raw: bytes) -> str:
    """UTF-8, with each byte that is not replaced by U+FFFD; stderr names the first one."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"conclave: the task is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at position "
            f"{exc.start}); each invalid byte was replaced with U+FFFD",
            file=sys.stderr,
        )
        return raw.decode("utf-8", "replace")
