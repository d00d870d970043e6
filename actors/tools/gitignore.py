"""``.gitignore`` matching for ``glob`` and ``search``: the common patterns, no dependency.

Supported: comments, blank lines, ``!`` negation, a trailing ``/`` for directories only, a
leading or inner ``/`` anchoring the pattern to its file's directory, ``*``, ``?``,
``[...]`` classes, ``**`` (leading, trailing and inner) and backslash escapes. As in git, a
deeper ``.gitignore`` overrides a shallower one, the last matching line of a file wins, and
the walk never enters an ignored directory (so nothing inside it can be re-included).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import attrs

__all__ = ["IgnoreFile", "Ignorer", "glob_regex"]


def glob_regex(pattern: str) -> str:
    """The regex (without anchors) for a ``/``-separated glob with ``**``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i):
            before = i == 0 or pattern[i - 1] == "/"
            after = i + 2 == n or pattern[i + 2] == "/"
            if before and after:
                if i + 2 == n:
                    out.append(".*")
                    i += 2
                else:
                    out.append("(?:.*/)?")
                    i += 3
                continue
            out.append("[^/]*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            start = i + 1
            if pattern[start : start + 1] in ("!", "^"):
                start += 1
            if pattern[start : start + 1] == "]":
                start += 1  # a ']' first in a class is one of its characters
            end = pattern.find("]", start)
            if end < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@attrs.frozen
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _rule(line: str) -> _Rule | None:
    line = line.rstrip("\n").rstrip("\r")
    if not line.strip() or line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    negate = line.startswith("!")
    if negate or line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    prefix = "" if anchored else "(?:.*/)?"
    try:
        regex = re.compile(f"^{prefix}{glob_regex(line)}$")
    except re.error:
        return None  # as git does, a pattern that cannot match is ignored
    return _Rule(regex, negate, dir_only)


@attrs.frozen
class IgnoreFile:
    """The rules of one ``.gitignore``; paths are given relative to its directory."""

    base: Path
    rules: tuple[_Rule, ...]

    @classmethod
    def parse(cls, base: Path, lines: Iterable[str]) -> IgnoreFile:
        return cls(base, tuple(r for r in map(_rule, lines) if r is not None))

    def decide(self, relative: str, *, is_dir: bool) -> bool | None:
        """Ignored (True), re-included (False), or not mentioned (None)."""
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(relative):
                return not rule.negate
        return None


class Ignorer:
    """The ``.gitignore`` files in force at one directory of a walk, deepest last."""

    def __init__(self, files: tuple[IgnoreFile, ...] = ()) -> None:
        self.files = files

    def entering(self, directory: Path, text: str | None) -> Ignorer:
        """The rules inside ``directory``, whose ``.gitignore`` reads ``text`` (if any)."""
        if text is None:
            return self
        found = IgnoreFile.parse(directory, text.splitlines())
        return Ignorer((*self.files, found)) if found.rules else self

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        for file in reversed(self.files):
            try:
                relative = path.relative_to(file.base).as_posix()
            except ValueError:
                continue
            decided = file.decide(relative, is_dir=is_dir)
            if decided is not None:
                return decided
        return False
