"""docs/modes-and-permissions.md quotes what the code says and lists what it decides."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.human.tool_approval import RefuseTools
from conclave.actors.tools import permissions
from conclave.config.schema.permissions import PermissionMode
from conclave.ui.serve.asking import nobody_answered

PAGE = (Path(__file__).parents[2] / "docs" / "modes-and-permissions.md").read_text(encoding="utf-8")


def test_every_permission_mode_has_a_row() -> None:
    assert all(f"| `{mode.value}` |" in PAGE for mode in PermissionMode)


def test_the_headless_refusal_is_quoted_as_the_model_reads_it() -> None:
    assert RefuseTools().reason in " ".join(PAGE.split())


def test_the_served_runs_timeout_denial_is_quoted_as_the_model_reads_it() -> None:
    assert nobody_answered(300.0) in " ".join(PAGE.split())


def test_every_read_only_program_is_named() -> None:
    named = sorted(p for p in permissions.READ_ONLY_PROGRAMS if f"`{p}`" not in PAGE)
    assert named == []
    assert "`git status|diff|log|show`" in PAGE
    assert {"status", "diff", "log", "show"} == permissions.READ_ONLY_GIT


def test_the_path_arguments_rules_match_are_named_in_order() -> None:
    assert ", ".join(f"`{a}`" for a in permissions.PATH_ARGUMENTS) in PAGE
