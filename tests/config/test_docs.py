"""docs/configuration.md names every field of every config section, so the reference stays
true as fields are added."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import attrs

from conclave.config.schema import ConclaveConfig

DOC = Path(__file__).parents[2] / "docs" / "configuration.md"


def _sections(tp: Any) -> list[Any]:
    if attrs.has(tp):
        return [tp]
    return [s for arg in typing.get_args(tp) for s in _sections(arg)]


def _every_field() -> set[str]:
    names: set[str] = set()
    seen: set[Any] = set()
    stack: list[Any] = [ConclaveConfig]
    while stack:
        section = stack.pop()
        if section in seen:
            continue
        seen.add(section)
        for field in attrs.fields(attrs.resolve_types(section)):
            names.add(field.name)
            stack.extend(_sections(field.type))
    return names


def test_the_configuration_reference_has_a_row_for_every_field() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = sorted(name for name in _every_field() if f"| `{name}` |" not in text)
    assert missing == []
