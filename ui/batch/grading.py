"""Grading a batch's answers against each line's ``expected`` (``--grade``).

Every method compares the run's ``final_answer`` (no answer is never correct) with
``expected``, which may also be a list of acceptable values (any one matching is correct):

* ``exact``: equal after normalising both: Unicode NFKC, case folded, runs of whitespace
  made one space, leading and trailing whitespace and a trailing ``.`` removed.
* ``contains``: the normalised expected text occurs in the normalised answer.
* ``regex``: ``re.search(expected, answer)`` on the answer as it is (write ``(?i)`` for
  case-insensitive); a pattern that does not compile makes the line bad.
* ``number``: the last number in the answer (``-1,234.5``, ``3e8`` and ``42%`` read as
  -1234.5, 3e8 and 42) is within ``--tolerance`` (absolute, default 1e-6) of expected, which
  must be a number or text that reads as one.
"""

from __future__ import annotations

import enum
import math
import re
import unicodedata
from typing import Any

__all__ = ["DEFAULT_TOLERANCE", "Grade", "expected_problem", "is_correct", "last_number"]

DEFAULT_TOLERANCE = 1e-6


class Grade(enum.Enum):
    EXACT = "exact"
    CONTAINS = "contains"
    REGEX = "regex"
    NUMBER = "number"


_NUMBER = re.compile(
    r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?![\d,]*\d)"
)


def _normalise(text: str) -> str:
    text = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return text.removesuffix(".").rstrip()


def last_number(text: str) -> float | None:
    """The last number written in ``text``, or ``None`` when there is none."""
    found = None
    for match in _NUMBER.finditer(text):
        found = match.group()
    return None if found is None else float(found.replace(",", ""))


def _options(expected: Any) -> list[Any]:
    return list(expected) if isinstance(expected, list) else [expected]


def expected_problem(grade: Grade, expected: Any) -> str | None:
    """Why ``expected`` cannot be graded by ``grade`` (making its line bad), or ``None``."""
    options = _options(expected)
    if not options:
        return '"expected" is an empty list; give at least one acceptable answer'
    for option in options:
        if isinstance(option, bool) or not isinstance(option, str | int | float):
            return f'"expected" must be text or a number (or a list of them), got {option!r}'
        if grade is Grade.REGEX:
            try:
                re.compile(str(option))
            except re.error as exc:
                return f'"expected" is not a valid regular expression ({exc}); fix or escape it'
        if grade is Grade.NUMBER and _as_number(option) is None:
            return f'--grade number: "expected" {option!r} is not a number; write it as one'
    return None


def _as_number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    return last_number(str(value)) if isinstance(value, str) and value.strip() else None


def is_correct(grade: Grade, answer: str | None, expected: Any, tolerance: float) -> bool:
    """Whether ``answer`` matches any acceptable value of ``expected`` (checked already with
    :func:`expected_problem`)."""
    if answer is None:
        return False
    return any(_matches(grade, answer, option, tolerance) for option in _options(expected))


def _matches(grade: Grade, answer: str, expected: Any, tolerance: float) -> bool:
    if grade is Grade.EXACT:
        return _normalise(answer) == _normalise(str(expected))
    if grade is Grade.CONTAINS:
        return _normalise(str(expected)) in _normalise(answer)
    if grade is Grade.REGEX:
        return re.search(str(expected), answer) is not None
    got, want = last_number(answer), _as_number(expected)
    return got is not None and want is not None and abs(got - want) <= tolerance
