"""Grading a batch's answers against each line's ``expected`` (``--grade``, or a line's own
``"grade"``).

Every grader compares the run's answer (after extraction, :mod:`ui.batch.extract`; no
answer is never correct) with ``expected``, which may also be a list of acceptable values
(any one matching is correct):

* ``exact``: equal, once leading and trailing whitespace is removed.
* ``normalised``: equal after normalising both: Unicode NFKC, case folded, runs of
  whitespace made one space, leading and trailing whitespace and a trailing ``.`` removed.
* ``contains``: the normalised expected text occurs in the normalised answer.
* ``regex``: ``re.search(expected, answer)`` on the answer as it is (write ``(?i)`` for
  case-insensitive); a pattern that does not compile makes the line bad.
* ``number`` (or ``numeric``): the last number in the answer (``-1,234.5``, ``3e8`` and
  ``42%`` read as -1234.5, 3e8 and 42) is within ``--tolerance`` (absolute, default 1e-6) of
  expected, which must be a number or text that reads as one.
* ``json:FIELD``: the answer's JSON (:func:`~ui.batch.extract.find_json`) has FIELD, equal
  to expected: numbers within the tolerance, text normalised, anything else as JSON.
* ``MODULE:FUNCTION``: ``FUNCTION(answer, expected)`` from an importable module (the current
  directory is searched first) returns ``True`` or ``False``.
* ``model``: a judge config answers (:mod:`ui.batch.judge`); graded in the run's job.
"""

from __future__ import annotations

import enum
import importlib
import math
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

import attrs

from conclave.ui.batch.extract import find_json, is_missing, json_field

__all__ = [
    "DEFAULT_TOLERANCE",
    "Grade",
    "GradeError",
    "Grader",
    "expected_problem",
    "is_correct",
    "last_number",
    "load_function",
    "parse_grader",
]

DEFAULT_TOLERANCE = 1e-6


class Grade(enum.Enum):
    EXACT = "exact"
    NORMALISED = "normalised"
    CONTAINS = "contains"
    REGEX = "regex"
    NUMBER = "number"
    JSON_FIELD = "json"
    FUNCTION = "function"
    MODEL = "model"


_ALIASES = {"numeric": Grade.NUMBER, "normalized": Grade.NORMALISED}
_PLAIN = (Grade.EXACT, Grade.NORMALISED, Grade.CONTAINS, Grade.REGEX, Grade.NUMBER, Grade.MODEL)
GRADER_HELP = (
    "exact, normalised, contains, regex, number (or numeric), json:FIELD, model, or MODULE:FUNCTION"
)


class GradeError(Exception):
    """A grader could not grade an answer (a function that raised or returned no bool)."""


@attrs.frozen(kw_only=True)
class Grader:
    method: Grade
    argument: str | None = None
    """``json``'s field, or ``function``'s ``module:function``."""

    @property
    def spec(self) -> str:
        if self.method is Grade.FUNCTION:
            return str(self.argument)
        method: str = self.method.value
        return method + ("" if self.argument is None else f":{self.argument}")


def parse_grader(text: str) -> Grader:
    """A grader as written (``--grade`` or a line's ``"grade"``); ``ValueError`` says why
    not. A ``MODULE:FUNCTION`` is imported here, so a typo is found before anything runs."""
    text = text.strip()
    name, colon, argument = text.partition(":")
    if not colon:
        method = _ALIASES.get(text)
        if method is None:
            try:
                method = Grade(text)
            except ValueError:
                method = None
        if method is None or method not in _PLAIN:
            raise ValueError(f"{text!r} is not a grader; use {GRADER_HELP}")
        return Grader(method=method)
    if name == Grade.JSON_FIELD.value:
        if not argument:
            raise ValueError("json: give the answer's field after the colon, as json:answer")
        return Grader(method=Grade.JSON_FIELD, argument=argument)
    load_function(text)
    return Grader(method=Grade.FUNCTION, argument=text)


_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def load_function(spec: str) -> Callable[..., Any]:
    """The function ``module:function`` names; ``ValueError`` says why it cannot be had."""
    if spec in _FUNCTIONS:
        return _FUNCTIONS[spec]
    module_name, _, name = spec.partition(":")
    if not module_name or not name.isidentifier():
        raise ValueError(f"{spec!r} is not a grader; use {GRADER_HELP}")
    if "" not in sys.path:
        sys.path.insert(0, "")  # the current directory, as ``python -m`` searches it
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ValueError(
            f"{spec}: cannot import {module_name!r} ({type(exc).__name__}: {exc}); run from "
            "the directory that holds it, or install it"
        ) from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"{spec}: {module_name} has no function {name!r}")
    _FUNCTIONS[spec] = function
    return _FUNCTIONS[spec]


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


def expected_problem(grader: Grader, expected: Any) -> str | None:
    """Why ``expected`` cannot be graded by ``grader`` (making its line bad), or ``None``."""
    if grader.method in (Grade.FUNCTION, Grade.MODEL):
        return None  # any JSON value: the function or the judge reads it
    options = _options(expected)
    if not options:
        return '"expected" is an empty list; give at least one acceptable answer'
    for option in options:
        scalar = isinstance(option, str | int | float) and not isinstance(option, bool)
        if not scalar and grader.method is not Grade.JSON_FIELD:
            return f'"expected" must be text or a number (or a list of them), got {option!r}'
        if grader.method is Grade.REGEX:
            try:
                re.compile(str(option))
            except re.error as exc:
                return f'"expected" is not a valid regular expression ({exc}); fix or escape it'
        if grader.method is Grade.NUMBER and _as_number(option) is None:
            return f'--grade number: "expected" {option!r} is not a number; write it as one'
    return None


def _as_number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    return last_number(str(value)) if isinstance(value, str) and value.strip() else None


def is_correct(grader: Grader, answer: str | None, expected: Any, tolerance: float) -> bool:
    """Whether ``answer`` matches any acceptable value of ``expected`` (checked already with
    :func:`expected_problem`). Raises :class:`GradeError` for a function that fails."""
    if answer is None:
        return False
    if grader.method is Grade.FUNCTION:
        return _call(str(grader.argument), answer, expected)
    if grader.method is Grade.JSON_FIELD:
        value = json_field(find_json(answer), str(grader.argument))
        if is_missing(value):
            return False
        return any(_same_value(value, option, tolerance) for option in _options(expected))
    return any(_matches(grader.method, answer, option, tolerance) for option in _options(expected))


def _call(spec: str, answer: str, expected: Any) -> bool:
    try:
        verdict = load_function(spec)(answer, expected)
    except Exception as exc:
        raise GradeError(f"{spec} raised {type(exc).__name__}: {exc}") from None
    if not isinstance(verdict, bool):
        raise GradeError(f"{spec} returned {verdict!r}; a grader returns True or False")
    return verdict


def _same_value(value: Any, expected: Any, tolerance: float) -> bool:
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        got = _as_number(value) if not isinstance(value, bool) else None
        return got is not None and abs(got - expected) <= tolerance
    if isinstance(expected, str):
        return isinstance(value, str | int | float) and _normalise(str(value)) == _normalise(
            expected
        )
    return bool(value == expected)


def _matches(method: Grade, answer: str, expected: Any, tolerance: float) -> bool:
    if method is Grade.EXACT:
        return answer.strip() == str(expected).strip()
    if method is Grade.NORMALISED:
        return _normalise(answer) == _normalise(str(expected))
    if method is Grade.CONTAINS:
        return _normalise(str(expected)) in _normalise(answer)
    if method is Grade.REGEX:
        return re.search(str(expected), answer) is not None
    got, want = last_number(answer), _as_number(expected)
    return got is not None and want is not None and abs(got - want) <= tolerance
