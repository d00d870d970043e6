"""Validators shared by the config sections."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["fraction", "ge0", "positive_or_none"]

ge0 = attrs.validators.ge(0.0)
fraction = [attrs.validators.ge(0.0), attrs.validators.le(1.0)]


def positive_or_none(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{attr.name!r} must be > 0 seconds or null, got {value!r}")
