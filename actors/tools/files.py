"""The file tools: ``read_file`` and ``list_directory`` (read-only), ``write_file``,
``edit_file`` and ``delete_file``.

Each resolves its path through the context (the policy, and for writes the plan-mode lock)
in the trio thread, then does its I/O through :mod:`actors.tools.fs`: inline for small
files, in one worker thread for large ones (:attr:`ToolLimits.inline_io_bytes`). A read in a
worker thread is abandoned on cancellation (nothing to undo); a write is not, so a cancelled
write has either fully happened or not at all before the cancellation is delivered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import trio

from conclave.actors.tools import fs
from conclave.actors.tools.protocol import ToolMetadata, ToolResult
from conclave.actors.tools.spec import ToolContext, ToolError, ToolSpec
from conclave.actors.tools.text import short_diff

__all__ = ["DELETE_FILE", "EDIT_FILE", "LIST_DIRECTORY", "READ_FILE", "WRITE_FILE"]

_BINARY_PROBE = 8192

R = TypeVar("R")


async def _blocking(
    ctx: ToolContext, size: int, work: Callable[..., R], *args: Any, undoable: bool
) -> R:
    """``work(*args)`` inline when ``size`` is small, else in a worker thread (abandoned on
    cancellation only when ``undoable``: a read, whose result nobody needs any more)."""
    if size <= ctx.limits.inline_io_bytes:
        return work(*args)
    return await trio.to_thread.run_sync(work, *args, abandon_on_cancel=undoable)


def _path_param(what: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": what}


def _decode(data: bytes, path: str) -> str:
    if b"\x00" in data[:_BINARY_PROBE]:
        raise ToolError(f"{path} is a binary file; only text files can be read or edited")
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{path} is not UTF-8 text (byte {exc.start}); only text files can be edited"
        ) from None


# read_file ---------------------------------------------------------------------------------


def _read_lines(path: Path, shown: str, offset: int, limit: int, ctx: ToolContext) -> ToolResult:
    limits = ctx.limits
    fd = fs.open_file(path)
    with open(fd, "rb") as file:
        if b"\x00" in file.peek(_BINARY_PROBE)[:_BINARY_PROBE]:
            return ToolResult(
                ok=False, error=f"{shown} is a binary file; read_file shows text files only"
            )
        lines: list[str] = []
        number, used, more = 0, 0, False
        max_line = limits.max_line_chars
        while True:
            raw = file.readline(max_line * 4)
            if not raw:
                break
            long = not raw.endswith(b"\n") and len(raw) == max_line * 4
            while long:  # skip the rest of a very long line without holding it
                rest = file.readline(max_line * 4)
                long = bool(rest) and not rest.endswith(b"\n")
            number += 1
            if number < offset:
                continue
            if len(lines) >= limit or used >= limits.read_max_bytes:
                more = True
                break
            used += len(raw)
            text = raw.decode(errors="replace").rstrip("\r\n")
            if len(text) > max_line:
                text = text[:max_line] + f" [line cut at {max_line} characters]"
            lines.append(f"{number:>6}\t{text}")
    if not lines:
        if number == 0:
            return ToolResult(ok=True, output=f"({shown} is empty)")
        return ToolResult(
            ok=False,
            error=f"offset {offset} is past the end of {shown}, which has {number} lines; "
            "use a smaller offset",
        )
    output = "\n".join(lines)
    if more:
        last = offset + len(lines) - 1
        output += f"\n[lines {offset}-{last} shown; more follow: read on with offset={last + 1}]"
    return ToolResult(ok=True, output=output, metadata=ToolMetadata(bytes=used))


async def _read_file(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    path = ctx.readable(args["path"])
    offset = args.get("offset", 1)
    limit = args.get("limit", ctx.limits.read_default_lines)
    return await _blocking(
        ctx, fs.size_hint(path), _read_lines, path, args["path"], offset, limit, ctx, undoable=True
    )


READ_FILE = ToolSpec(
    name="read_file",
    description=(
        "Read a text file. Lines come numbered (number, tab, text). Long files come in pages: "
        "pass offset (first line, from 1) and limit (how many lines) to read on."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _path_param("The file, relative to your workspace or absolute."),
            "offset": {"type": "integer", "minimum": 1, "description": "First line (from 1)."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    read_only=True,
    run=_read_file,
)


# list_directory ----------------------------------------------------------------------------


def _list(path: Path, shown: str, ctx: ToolContext) -> ToolResult:
    try:
        fd = fs.open_dir(path)
    except NotADirectoryError:
        raise ToolError(f"{shown} is a file, not a directory; use read_file to read it") from None
    try:
        with os.scandir(fd) as entries:
            rows = []
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    rows.append((entry.name, f"{entry.name}/"))
                elif stat.S_ISLNK(info.st_mode):
                    target = os.readlink(entry.name, dir_fd=fd)
                    rows.append((entry.name, f"{entry.name} -> {target}"))
                else:
                    rows.append((entry.name, f"{entry.name} ({info.st_size} bytes)"))
    finally:
        os.close(fd)
    if not rows:
        return ToolResult(ok=True, output=f"({shown} is empty)")
    rows.sort()
    cap = ctx.limits.list_max_entries
    output = "\n".join(row for _, row in rows[:cap])
    if len(rows) > cap:
        output += f"\n[{len(rows) - cap} more entries not shown: use glob to narrow down]"
    return ToolResult(ok=True, output=output)


async def _list_directory(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    shown = args.get("path", ".")
    path = ctx.readable(shown)
    return await _blocking(ctx, fs.size_hint(path), _list, path, shown, ctx, undoable=True)


LIST_DIRECTORY = ToolSpec(
    name="list_directory",
    description="List a directory: subdirectories end in '/', files show their size.",
    parameters={
        "type": "object",
        "properties": {
            "path": _path_param("The directory (default: your workspace)."),
        },
        "additionalProperties": False,
    },
    read_only=True,
    run=_list_directory,
)


# write_file, edit_file ---------------------------------------------------------------------


def _current(path: Path, ctx: ToolContext) -> bytes | None:
    try:
        return fs.read_bytes(path, limit=ctx.limits.diff_max_bytes + 1)
    except FileNotFoundError:
        return None


def _diff(
    before: bytes, after: bytes, shown: str, ctx: ToolContext, *, created: bool = False
) -> str:
    if max(len(before), len(after)) > ctx.limits.diff_max_bytes:
        return "(no diff: the file is too large to show one)"
    if b"\x00" in before[:_BINARY_PROBE] or b"\x00" in after[:_BINARY_PROBE]:
        return "(no diff: binary content)"
    old, new = before.decode(errors="replace"), after.decode(errors="replace")
    return short_diff(old, new, path=shown, max_lines=ctx.limits.diff_max_lines, created=created)


def _replace(path: Path, data: bytes, ctx: ToolContext, *, make_parents: bool = True) -> None:
    """Write ``data`` as the file at ``path``: atomically, unless ``path`` is a single-file
    grant, whose inode the sandboxes mount (:func:`actors.tools.fs.write_in_place`)."""
    if ctx.policy.is_granted_file(path):
        fs.write_in_place(path, data)
    else:
        fs.write_atomic(path, data, make_parents=make_parents)


def _write(path: Path, shown: str, data: bytes, ctx: ToolContext) -> ToolResult:
    before = _current(path, ctx)
    _replace(path, data, ctx)
    verb = "Created" if before is None else "Updated"
    diff = _diff(before or b"", data, shown, ctx, created=before is None)
    return ToolResult(
        ok=True,
        output=f"{verb} {shown} ({len(data)} bytes)\n{diff}".rstrip("\n"),
        metadata=ToolMetadata(bytes=len(data), paths_written=(path,)),
    )


async def _write_file(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    path = ctx.writable(args["path"])
    data = args["content"].encode()
    size = max(len(data), fs.size_hint(path))
    return await _blocking(ctx, size, _write, path, args["path"], data, ctx, undoable=False)


WRITE_FILE = ToolSpec(
    name="write_file",
    description=(
        "Create a file, or replace its whole content. Missing directories are created. "
        "Returns a diff of the change. To change part of a file, use edit_file."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _path_param("The file, relative to your workspace or absolute."),
            "content": {"type": "string", "description": "The complete new content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    run=_write_file,
)


def _edit(path: Path, shown: str, old: str, new: str, every: bool, ctx: ToolContext) -> ToolResult:
    data = fs.read_bytes(path, limit=ctx.limits.diff_max_bytes + 1)
    if len(data) > ctx.limits.diff_max_bytes:
        return ToolResult(
            ok=False,
            error=f"{shown} is larger than {ctx.limits.diff_max_bytes} bytes, too large to "
            "edit; use run_shell (e.g. sed) or write_file",
        )
    text = _decode(data, shown)
    found = text.count(old)
    if found == 0:
        return ToolResult(
            ok=False,
            error=f"the text to replace was not found in {shown}; read the file and copy the "
            "exact text, whitespace and indentation included",
        )
    if found > 1 and not every:
        return ToolResult(
            ok=False,
            error=f"the text to replace occurs {found} times in {shown}; include more of the "
            "surrounding lines to make it unique, or pass replace_all=true to replace all",
        )
    after = text.replace(old, new).encode()
    _replace(path, after, ctx, make_parents=False)
    times = "1 occurrence" if found == 1 else f"{found} occurrences"
    diff = _diff(data, after, shown, ctx)
    return ToolResult(
        ok=True,
        output=f"Edited {shown} ({times} replaced)\n{diff}".rstrip("\n"),
        metadata=ToolMetadata(bytes=len(after), paths_written=(path,)),
    )


async def _edit_file(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    old, new = args["old"], args["new"]
    if old == new:
        return ToolResult(ok=False, error="old and new are the same text: nothing would change")
    path = ctx.writable(args["path"])
    every = args.get("replace_all", False)
    return await _blocking(
        ctx, fs.size_hint(path), _edit, path, args["path"], old, new, every, ctx, undoable=False
    )


EDIT_FILE = ToolSpec(
    name="edit_file",
    description=(
        "Replace exact text in a file. 'old' must occur exactly once unless replace_all is "
        "true; copy it exactly from read_file's output (without the line numbers). "
        "Returns a diff of the change."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _path_param("The file, relative to your workspace or absolute."),
            "old": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence (default: false).",
            },
        },
        "required": ["path", "old", "new"],
        "additionalProperties": False,
    },
    run=_edit_file,
)


# delete_file -------------------------------------------------------------------------------


def _delete(path: Path, shown: str) -> ToolResult:
    size = fs.remove_file(path)
    return ToolResult(
        ok=True,
        output=f"Deleted {shown} ({size} bytes)",
        metadata=ToolMetadata(bytes=size, paths_written=(path,)),
    )


async def _delete_file(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    path = ctx.writable(args["path"])
    return await _blocking(ctx, 0, _delete, path, args["path"], undoable=False)


DELETE_FILE = ToolSpec(
    name="delete_file",
    description="Delete a file (not a directory).",
    parameters={
        "type": "object",
        "properties": {"path": _path_param("The file, relative to your workspace or absolute.")},
        "required": ["path"],
        "additionalProperties": False,
    },
    run=_delete_file,
)
