"""docs/sessions.md stays true to the code: every entry kind with its fields, the refusal of
a newer format as the program words it, and the compaction defaults."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

import conclave.actors.session.entries  # noqa: F401  (registers the entries)
from conclave.actors.session.compaction import CompactionPolicy
from conclave.actors.session.entries import SessionEntry
from conclave.actors.session.migrations import SESSION_VERSION, SessionTooNew
from conclave.runtime.messages import registered_kinds

PAGE = (Path(__file__).parents[2] / "docs" / "sessions.md").read_text(encoding="utf-8")
BASE = {"id", "at"}


def _rows() -> dict[str, str]:
    body = PAGE.split("## The file\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([a-z_]+)` \| (.*) \|$", body, flags=re.MULTILINE))


def test_every_entry_kind_is_documented_with_every_field_and_nothing_else() -> None:
    kinds = {
        kind: cls
        for kind, cls in registered_kinds().items()
        if issubclass(cls, SessionEntry) and cls is not SessionEntry
    }
    rows = _rows()
    assert set(rows) == set(kinds)
    for kind, cls in kinds.items():
        for field in attrs.fields(cls):
            if field.name not in BASE:
                assert f"`{field.name}`" in rows[kind], (kind, field.name)


def test_the_refusal_of_a_newer_format_is_quoted_as_the_program_words_it() -> None:
    message = str(SessionTooNew(".../session.jsonl", SESSION_VERSION + 1))
    assert message in PAGE


def test_the_compaction_defaults_are_the_ones_documented() -> None:
    policy = CompactionPolicy()
    assert f"`threshold_tokens`, default {policy.threshold_tokens:,}" in PAGE
    assert f"`preserve_recent`, default {policy.preserve_recent}" in PAGE
