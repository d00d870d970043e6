"""Collaboration-mode prompts: plan mode asks for a JSON plan in the format parse_plan reads
and forbids changes; execute mode asks for autonomy; default adds nothing. The presenter of
a plan run presents one plan."""

from __future__ import annotations

import json
import re

import pytest

from conclave.actors.planning.plan import parse_plan
from conclave.actors.prompts.modes import (
    PLAN_MODE_MARKER,
    is_plan_mode,
    mode_prefix,
    presentation_mode_note,
)
from conclave.config.modes import CollaborationMode


def test_default_mode_adds_nothing() -> None:
    assert mode_prefix(CollaborationMode.DEFAULT) == ""


def test_the_plan_prefix_shows_a_format_that_parses_as_a_plan() -> None:
    shown = re.search(r"format: (\{.*\})\. 'goal'", mode_prefix(CollaborationMode.PLAN))

    assert shown is not None
    assert parse_plan(shown.group(1)) is not None
    assert set(json.loads(shown.group(1))) == {
        "goal",
        "steps",
        "estimated_total_time",
        "risks",
        "prerequisites",
    }


@pytest.mark.parametrize(
    "words",
    ["read-only", "change nothing", "<proposed_plan>", "'goal' and 'steps' are required"],
)
def test_the_plan_prefix_allows_investigation_and_forbids_changes(words: str) -> None:
    assert words in mode_prefix(CollaborationMode.PLAN)


@pytest.mark.parametrize(
    "words",
    [
        "do not ask the user",
        "make a reasonable assumption, record it",
        "Report each milestone",
        "finish the task",
    ],
)
def test_the_execute_prefix_asks_for_autonomy(words: str) -> None:
    assert words in mode_prefix(CollaborationMode.EXECUTE)


@pytest.mark.parametrize("mode", [CollaborationMode.PLAN, CollaborationMode.EXECUTE])
def test_a_prefix_ends_ready_to_precede_the_system_message(mode: CollaborationMode) -> None:
    assert mode_prefix(mode).endswith(". ")


def test_a_plan_runs_presenter_presents_one_plan_in_the_same_format() -> None:
    note = presentation_mode_note(CollaborationMode.PLAN)

    assert "one plan" in note
    assert "<proposed_plan>" in note


@pytest.mark.parametrize("mode", [CollaborationMode.DEFAULT, CollaborationMode.EXECUTE])
def test_other_modes_leave_the_presentation_as_it_is(mode: CollaborationMode) -> None:
    assert presentation_mode_note(mode) == ""


def test_plan_mode_is_told_by_the_prefix_a_system_message_starts_with() -> None:
    assert is_plan_mode(mode_prefix(CollaborationMode.PLAN) + "You are agent1")
    assert is_plan_mode(presentation_mode_note(CollaborationMode.PLAN) + "You are agent1")


def test_the_marker_later_in_a_system_message_is_not_plan_mode() -> None:
    """A configured system_prompt comes after Conclave's rules: it cannot switch modes."""
    assert not is_plan_mode("You are agent1. Instructions: start with [PLAN MODE]")


@pytest.mark.parametrize("mode", [CollaborationMode.DEFAULT, CollaborationMode.EXECUTE])
def test_other_modes_are_not_plan_mode(mode: CollaborationMode) -> None:
    assert not is_plan_mode(mode_prefix(mode) + "You are agent1")
    assert PLAN_MODE_MARKER not in mode_prefix(mode)
