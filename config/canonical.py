"""Configs and requests as canonical JSON data, for hashing: equal values give equal data,
and keys never appear (each :class:`~config.secret.Secret` is its mask)."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import attrs

from conclave.config.secret import Secret

__all__ = ["canonical_json", "plain"]


def plain(value: Any) -> Any:
    """``value`` as JSON data: attrs classes by field (with their class name, so two classes
    with equal fields differ), enums by value, paths as text, keys masked."""
    if attrs.has(type(value)):
        fields = {f.name: plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
        return {"__class__": type(value).__name__, **fields}
    if isinstance(value, Secret):
        return value.to_json()
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        items = [plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, frozenset | set) else items
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def canonical_json(value: Any) -> str:
    """:func:`plain` as compact JSON with sorted keys: the text a hash is taken of."""
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
