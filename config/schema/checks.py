"""Validators shared by the config sections.

Each one checks the type as well as the range, so a config built in code is held to what
the loader enforces on YAML: a ``bool`` is not a number, and nothing infinite or NaN passes
(a ``.nan`` timeout used to load and crash the run; an ``.inf`` latency hung it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["InvalidItem", "InvalidItems", "InvalidValue", "fraction", "seconds", "whole"]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


class InvalidValue(ValueError):
    """A validator's refusal, with what would have done (``conclave validate --json`` shows
    it as ``expected``); the message says the same in a sentence."""

    def __init__(self, message: str, *, expected: str) -> None:
        super().__init__(message)
        self.expected = expected


class InvalidItem(InvalidValue):
    """A list's refusal that names the item at fault: reported at that item's line and
    column (``index`` counts from 0)."""

    def __init__(self, message: str, *, expected: str, index: int) -> None:
        super().__init__(message, expected=expected)
        self.index = index


class InvalidItems(ValueError):
    """Every refused item of a list, so that each is reported at its own line at once (a
    config's problems are all shown together); the message is the first item's."""

    def __init__(self, items: tuple[InvalidItem, ...]) -> None:
        super().__init__(str(items[0]))
        self.items = items


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _show(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def _got(value: object) -> str:
    """The value as written in YAML: ``-1`` rather than ``-1.0`` once loaded as a float."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return _show(value)
    return repr(value)


def seconds(*, high: float, zero: bool = False, optional: bool = False) -> Validator:
    """A finite number of seconds, up to ``high``; above 0 (or from 0 with ``zero``);
    ``None`` too with ``optional``."""
    span = f"from 0 to {_show(high)}" if zero else f"more than 0 and at most {_show(high)}"
    expected = f"{span} seconds" + (", or null" if optional else "")

    def check(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if (
            not _number(value)
            or not math.isfinite(value)
            or value > high
            or value < 0
            or (value == 0 and not zero)
        ):
            raise InvalidValue(
                f"{attr.name!r} must be {expected}; got {_got(value)}", expected=expected
            )

    return check


def whole(low: int, high: int, *, optional: bool = False) -> Validator:
    """A whole number from ``low`` to ``high``; ``None`` too with ``optional``."""
    expected = f"a whole number from {low} to {high}" + (", or null" if optional else "")

    def check(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise InvalidValue(
                f"{attr.name!r} must be {expected}; got {_got(value)}", expected=expected
            )

    return check


def _fraction(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not _number(value) or not math.isfinite(value) or not 0 <= value <= 1:
        raise InvalidValue(
            f"{attr.name!r} must be a number from 0 to 1; got {_got(value)}",
            expected="a number from 0 to 1",
        )


fraction: Validator = _fraction
