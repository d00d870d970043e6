"""The read-only finding tools: ``glob`` (paths by pattern) and ``search`` (regex over files).

Both walk from a directory the policy allows, skip ``.git`` and whatever ``.gitignore`` files
(from the grant's root down) exclude, never follow a symlinked directory, read a file only
after the policy has checked where it lands, and cap their results. The walk runs in a worker
thread that a cancellation abandons (it changes nothing).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.tools import fs
from conclave.actors.tools.gitignore import Ignorer, glob_regex
from conclave.actors.tools.paths import PathRefused
from conclave.actors.tools.protocol import ToolMetadata, ToolResult
from conclave.actors.tools.spec import ToolContext, ToolError, ToolSpec

__all__ = ["GLOB", "SEARCH", "walk"]

_IGNORE_FILE = ".gitignore"
_BINARY_PROBE = 8192


@attrs.frozen
class _Found:
    path: Path
    """Where the file is (not resolved: a symlink's own path)."""
    relative: str
    """``/``-separated, from the walk's base."""
    size: int


@attrs.define
class _Walk:
    seen: int = 0
    stopped: bool = False
    """The walk hit ``walk_max_entries`` and stopped early."""


def _ignore_text(directory: Path) -> str | None:
    try:
        return fs.read_bytes(directory / _IGNORE_FILE, limit=256 * 1024).decode(errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PathRefused):
        return None


def _inherited(ctx: ToolContext, base: Path) -> Ignorer:
    """The ``.gitignore`` rules in force at ``base`` from the directories above it, up to
    the root of the grant holding it."""
    grant = ctx.policy.grant_for(base)
    ignorer = Ignorer()
    if grant is None or base == grant.root:
        return ignorer
    for directory in [*reversed(base.parents)]:
        if directory == grant.root or grant.root in directory.parents:
            ignorer = ignorer.entering(directory, _ignore_text(directory))
    return ignorer


def walk(ctx: ToolContext, base: Path, state: _Walk, *, max_depth: int | None) -> Iterator[_Found]:
    """Files under the checked directory ``base``, in path order, ignored ones skipped."""
    stack: list[tuple[Path, str, Ignorer, int]] = [(base, "", _inherited(ctx, base), 1)]
    while stack:
        directory, prefix, ignorer, depth = stack.pop()
        ignorer = ignorer.entering(directory, _ignore_text(directory))
        try:
            fd = fs.open_dir(directory)
        except (OSError, PathRefused):
            continue
        try:
            with os.scandir(fd) as listing:
                entries = sorted((e.name, e.stat(follow_symlinks=False)) for e in listing)
        finally:
            os.close(fd)
        subdirs = []
        for name, info in entries:
            state.seen += 1
            if state.seen > ctx.limits.walk_max_entries:
                state.stopped = True
                return
            path = directory / name
            relative = f"{prefix}{name}"
            if stat.S_ISDIR(info.st_mode):
                if name == ".git" or ignorer.ignored(path, is_dir=True):
                    continue
                if max_depth is None or depth < max_depth:
                    subdirs.append((path, f"{relative}/", ignorer, depth + 1))
                continue
            if ignorer.ignored(path, is_dir=False):
                continue
            if stat.S_ISREG(info.st_mode):
                yield _Found(path, relative, info.st_size)
            elif stat.S_ISLNK(info.st_mode):
                target = _readable_link(ctx, path)
                if target is not None:
                    yield _Found(path, relative, target.stat().st_size)
        stack.extend(reversed(subdirs))


def _readable_link(ctx: ToolContext, link: Path) -> Path | None:
    """Where a symlinked file lands, if that is a regular file the agent may read."""
    target = Path(os.path.realpath(link))
    try:
        ctx.policy.check_read(target)
    except PathRefused:
        return None
    return target if target.is_file() else None


def _display(shown: str, relative: str) -> str:
    return relative if shown in (".", "./") else f"{shown.rstrip('/')}/{relative}"


def _walk_note(state: _Walk, ctx: ToolContext) -> str:
    if not state.stopped:
        return ""
    return f"\n[the walk stopped after {ctx.limits.walk_max_entries} entries: give a narrower path]"


# glob --------------------------------------------------------------------------------------


def _pattern(argument: str, glob: str) -> re.Pattern[str]:
    try:
        return re.compile(f"^{glob_regex(glob)}$")
    except re.error as exc:
        raise ToolError(
            f"argument {argument!r} ({glob!r}) is not a valid glob: {exc}; check its [...] classes"
        ) from None


def _glob(
    ctx: ToolContext, base: Path, shown: str, regex: re.Pattern[str], pattern: str
) -> ToolResult:
    depth = None if "**" in pattern else pattern.count("/") + 1
    state = _Walk()
    cap = ctx.limits.glob_max_results
    matches: list[str] = []
    total = 0
    for found in walk(ctx, base, state, max_depth=depth):
        if regex.match(found.relative):
            total += 1
            if len(matches) < cap:
                matches.append(_display(shown, found.relative))
    if not matches:
        return ToolResult(ok=True, output=f"no files match {pattern!r} in {shown}")
    output = "\n".join(matches)
    if total > cap:
        output += f"\n[{total - cap} more files match: narrow the pattern or the path]"
    return ToolResult(ok=True, output=output + _walk_note(state, ctx))


async def _glob_tool(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    pattern, shown = args["pattern"], args.get("path", ".")
    if pattern.startswith("/"):
        raise ToolError(
            f"argument 'pattern' ({pattern!r}) must be relative to 'path'; "
            "put the directory in 'path' and the pattern (e.g. '**/*.py') in 'pattern'"
        )
    regex = _pattern("pattern", pattern)
    base = ctx.readable(shown)
    return await trio.to_thread.run_sync(
        _glob, ctx, base, shown, regex, pattern, abandon_on_cancel=True
    )


GLOB = ToolSpec(
    name="glob",
    description=(
        "Find files by path pattern, relative to 'path' (default: your workspace): '*' and "
        "'?' stay within one directory, '**' spans any number ('**/*.py' finds Python files "
        "at any depth). Files ignored by .gitignore are skipped."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "e.g. 'src/**/*.py'."},
            "path": {"type": "string", "minLength": 1, "description": "Where to start."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    read_only=True,
    run=_glob_tool,
)


# search ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class _Query:
    regex: re.Pattern[str]
    only: re.Pattern[str] | None
    """Which files: matched against the name, or the relative path if it has a '/'."""
    by_path: bool


def _search_file(
    ctx: ToolContext, path: Path, shown: str, query: _Query, out: list[str], room: int
) -> tuple[int, int]:
    """Matches appended to ``out`` (at most ``room``), and (matches found, bytes read).

    The file is judged again where it lands now: it may have become a link since the walk
    listed it."""
    target = Path(os.path.realpath(path))
    try:
        ctx.policy.check_read(target)
        data = fs.read_bytes(target, limit=ctx.limits.search_max_file_bytes)
    except (OSError, PathRefused):
        return 0, 0
    if b"\x00" in data[:_BINARY_PROBE]:
        return 0, len(data)
    found = 0
    max_line = ctx.limits.max_line_chars
    for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
        if query.regex.search(line):
            found += 1
            if found <= room:
                text = line if len(line) <= max_line else line[:max_line] + " [line cut]"
                out.append(f"{shown}:{number}: {text}")
            else:
                break
    return found, len(data)


def _search(ctx: ToolContext, base: Path, shown: str, query: _Query) -> ToolResult:
    cap = ctx.limits.search_max_matches
    out: list[str] = []
    total = scanned = 0
    state = _Walk()
    single = base.is_file()
    if single:
        files: Iterator[_Found] = iter([_Found(base, base.name, base.stat().st_size)])
    else:
        files = walk(ctx, base, state, max_depth=None)
    for found in files:
        if found.size > ctx.limits.search_max_file_bytes:
            continue
        if query.only is not None:
            name = found.relative if query.by_path else found.path.name
            if not query.only.match(name):
                continue
        label = shown if single else _display(shown, found.relative)
        hits, read = _search_file(ctx, found.path, label, query, out, cap - len(out))
        total += hits
        scanned += read
        if total > cap:
            break
    if not out:
        return ToolResult(
            ok=True,
            output=f"no matches for {query.regex.pattern!r} in {shown}" + _walk_note(state, ctx),
            metadata=ToolMetadata(bytes=scanned),
        )
    output = "\n".join(out)
    if total > cap:
        output += f"\n[more than {cap} matches: only the first {cap} are shown; narrow the search]"
    return ToolResult(
        ok=True, output=output + _walk_note(state, ctx), metadata=ToolMetadata(bytes=scanned)
    )


async def _search_tool(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    flags = re.IGNORECASE if args.get("ignore_case", False) else 0
    try:
        regex = re.compile(args["pattern"], flags)
    except re.error as exc:
        raise ToolError(
            f"argument 'pattern' is not a valid regular expression: {exc}; "
            "escape special characters such as ( [ . * with a backslash"
        ) from None
    only = args.get("glob")
    query = _Query(
        regex=regex,
        only=_pattern("glob", only) if only else None,
        by_path=bool(only and "/" in only),
    )
    shown = args.get("path", ".")
    base = ctx.readable(shown)
    return await trio.to_thread.run_sync(_search, ctx, base, shown, query, abandon_on_cancel=True)


SEARCH = ToolSpec(
    name="search",
    description=(
        "Search file contents with a regular expression (Python syntax), line by line, "
        "under 'path' (a directory or one file; default: your workspace). Prints "
        "path:line: text. 'glob' limits which files: '*.py' matches names, 'src/**/*.py' "
        "paths. Binary files and files ignored by .gitignore are skipped."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "A regex."},
            "path": {"type": "string", "minLength": 1, "description": "Where to search."},
            "glob": {"type": "string", "minLength": 1, "description": "Which files."},
            "ignore_case": {"type": "boolean", "description": "Default: false."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    read_only=True,
    run=_search_tool,
)
