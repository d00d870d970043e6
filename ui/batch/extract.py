"""Answer extraction (``--extract``, or a line's ``"extract"``): the part of a run's final
answer that is graded, taken out before grading.

* ``last-line``: the last non-blank line.
* ``regex:PATTERN``: the last match of PATTERN (its first group, when it has groups).
* ``json:FIELD``: the field of the JSON the answer holds (the whole answer, else the last
  JSON object or array in it, as in a ```json fence); FIELD is a dotted path, a whole number
  indexing a list (``answer.items.0``). Text stays text; other values are their JSON.

Nothing found extracts ``None``, which no grader counts correct.
"""

from __future__ import annotations

import enum
import json
import re
from typing import Any

import attrs

__all__ = ["ExtractKind", "Extractor", "extract", "find_json", "json_field", "parse_extractor"]


class ExtractKind(enum.Enum):
    LAST_LINE = "last-line"
    REGEX = "regex"
    JSON_FIELD = "json"


@attrs.frozen(kw_only=True)
class Extractor:
    kind: ExtractKind
    argument: str | None = None
    """The pattern or the field."""

    @property
    def spec(self) -> str:
        return self.kind.value + ("" if self.argument is None else f":{self.argument}")


_MISSING = object()


def parse_extractor(text: str) -> Extractor:
    """``last-line``, ``regex:PATTERN`` or ``json:FIELD``; ``ValueError`` says what is wrong."""
    kind_text, colon, argument = text.partition(":")
    try:
        kind = ExtractKind(kind_text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is not an extraction; use last-line, regex:PATTERN or json:FIELD"
        ) from None
    if kind is ExtractKind.LAST_LINE:
        if colon:
            raise ValueError("last-line takes nothing after it; write last-line")
        return Extractor(kind=kind)
    if not argument:
        what = "pattern" if kind is ExtractKind.REGEX else "field"
        raise ValueError(f"{kind.value}: give the {what} after the colon")
    if kind is ExtractKind.REGEX:
        try:
            re.compile(argument)
        except re.error as exc:
            raise ValueError(f"regex:{argument} does not compile ({exc})") from None
    return Extractor(kind=kind, argument=argument)


def extract(extractor: Extractor, answer: str | None) -> str | None:
    """The graded part of ``answer`` (see the module docstring)."""
    if answer is None:
        return None
    if extractor.kind is ExtractKind.LAST_LINE:
        lines = [line.strip() for line in answer.splitlines() if line.strip()]
        return lines[-1] if lines else None
    assert extractor.argument is not None
    if extractor.kind is ExtractKind.REGEX:
        matches = list(re.finditer(extractor.argument, answer))
        if not matches:
            return None
        last = matches[-1]
        return last.group(1) if last.re.groups else last.group(0)
    value = json_field(find_json(answer), extractor.argument)
    if value is _MISSING:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def find_json(text: str) -> Any:
    """The JSON ``text`` holds: all of it, else the last object or array inside it;
    ``_MISSING`` when there is none."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    found: Any = _MISSING
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        found = value
        index = end


def json_field(data: Any, path: str) -> Any:
    """``data``'s field at the dotted ``path``; ``_MISSING`` when it has none."""
    value = data
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def is_missing(value: Any) -> bool:
    return value is _MISSING
