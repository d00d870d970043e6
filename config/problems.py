"""What is wrong with a config, as a list a newcomer can act on.

A :class:`Problem` says where (file, line, column, field path such as
``agents[1].backend.type``), what was wrong, what was expected, what was got, and, where a
close spelling exists, a suggestion (``did you mean 'openai'?``). :class:`ConfigError`
carries every problem found in one pass and renders one per line, compiler style::

    conclave.yaml:4:13: agents[0].backend.type: backend type 'opnai' is not available; ...

Suggestions come from the edit distance (:func:`closest`): a typo of one or two letters in a
key or a value of a fixed set is the commonest mistake in a hand-written config.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

__all__ = ["ConfigError", "Problem", "closest", "edit_distance"]


@attrs.frozen(kw_only=True)
class Problem:
    """One thing wrong (or, as a warning, worth changing) in a config."""

    message: str
    """The whole sentence: what was wrong, what was expected and what to do."""
    path: str = ""
    """The field, such as ``agents[1].backend.type`` (``""``: the file as a whole)."""
    file: str | None = None
    line: int | None = None
    """1-based, as editors count."""
    column: int | None = None
    """1-based."""
    expected: str | None = None
    got: str | None = None
    """The value as written (a key's value is never shown: ``********``)."""
    suggestion: str | None = None
    """The close spelling of a key or value, when there is one."""

    def render(self) -> str:
        """``file:line:column: path: message; did you mean 'x'?`` (parts that are unknown
        are left out)."""
        where = ""
        if self.file is not None:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        field = f"{self.path}: " if self.path else ""
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion is not None else ""
        return f"{where}{field}{self.message}{hint}"

    def to_json(self) -> dict[str, Any]:
        """The form ``conclave validate --json`` prints: every key always present."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
            "expected": self.expected,
            "got": self.got,
            "suggestion": self.suggestion,
        }

    def sort_key(self) -> tuple[int, int]:
        """Top to bottom in the file; problems without a line last, in the order found."""
        if self.line is None:
            return (1 << 62, 0)
        return (self.line, self.column or 0)


class ConfigError(ValueError):
    """A config file or value is wrong. Carries every problem found, rendered one per line,
    top to bottom; each names where, what was wrong and what to do.

    ``ConfigError("message")`` is one problem without a location (a file that cannot be
    read at all)."""

    def __init__(
        self,
        message: str | None = None,
        *,
        problems: Sequence[Problem] = (),
        warnings: Sequence[Problem] = (),
    ) -> None:
        self.warnings = tuple(warnings)
        """What was also found worth changing (not rendered: ``conclave validate`` shows
        them apart)."""
        found = list(problems)
        if message is not None:
            found.insert(0, Problem(message=message))
        if not found:
            raise ValueError("a ConfigError needs a message or at least one problem")
        self.problems: tuple[Problem, ...] = tuple(sorted(found, key=Problem.sort_key))
        super().__init__("\n".join(problem.render() for problem in self.problems))


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of
    two neighbouring letters (``mdoel`` is one edit from ``model``) each count one."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice a typo most likely meant: the same word in another case, else the nearest
    by :func:`edit_distance` within a third of the word's length (at least one edit, at most
    three), the first in ``choices`` on a tie; ``None`` when nothing is that close."""
    options = list(choices)
    for option in options:
        if option.lower() == word.lower():
            return option
    limit = max(1, min(3, len(word) // 3))
    best: tuple[int, str] | None = None
    for option in options:
        distance = edit_distance(word.lower(), option.lower())
        if distance <= limit and (best is None or distance < best[0]):
            best = (distance, option)
    return None if best is None else best[1]
