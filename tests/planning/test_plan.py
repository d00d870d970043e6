"""A plan is read from a model's reply when the reply is one: bare JSON, a ```json fence, or
inside <proposed_plan> tags, with ``goal`` and ``steps`` present. Anything else is not a
plan (``None``: the caller shows the text). Rendering is for reading."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conclave.actors.planning.plan import (
    Plan,
    PlanStep,
    parse_plan,
    plan_json,
    plan_to_dict,
    render_plan,
)

FULL: dict[str, Any] = {
    "goal": "Add a --mode flag",
    "steps": [
        {
            "step_number": 1,
            "action": "Read the argument parser",
            "reason": "learn its conventions",
            "tools_needed": ["read_file", "grep"],
            "estimated_time": "5 min",
        },
        {
            "step_number": 2,
            "action": "Add the flag",
            "reason": "what was asked",
            "tools_needed": ["edit_file"],
            "estimated_time": "10 min",
        },
    ],
    "estimated_total_time": "15 min",
    "risks": ["abbreviation clash with --model"],
    "prerequisites": ["a clean working tree"],
}
EXPECTED = Plan(
    goal="Add a --mode flag",
    steps=(
        PlanStep(
            step_number=1,
            action="Read the argument parser",
            reason="learn its conventions",
            tools_needed=("read_file", "grep"),
            estimated_time="5 min",
        ),
        PlanStep(
            step_number=2,
            action="Add the flag",
            reason="what was asked",
            tools_needed=("edit_file",),
            estimated_time="10 min",
        ),
    ),
    estimated_total_time="15 min",
    risks=("abbreviation clash with --model",),
    prerequisites=("a clean working tree",),
)
MINIMAL = {"goal": "g", "steps": [{"action": "a"}]}


def test_bare_json_is_a_plan() -> None:
    assert parse_plan(json.dumps(FULL)) == EXPECTED


def test_bare_json_with_surrounding_whitespace_is_a_plan() -> None:
    assert parse_plan("\n  " + json.dumps(FULL) + "\n\n") == EXPECTED


def test_a_json_fence_is_a_plan() -> None:
    assert parse_plan(f"```json\n{json.dumps(FULL, indent=2)}\n```") == EXPECTED


def test_a_json_fence_after_an_introduction_is_a_plan() -> None:
    reply = f"Here is my plan:\n\n```json\n{json.dumps(FULL)}\n```\nLet me know."

    assert parse_plan(reply) == EXPECTED


def test_a_plain_fence_is_a_plan() -> None:
    assert parse_plan(f"```\n{json.dumps(FULL)}\n```") == EXPECTED


def test_the_inside_of_proposed_plan_tags_is_a_plan() -> None:
    reply = f"I looked around.\n<proposed_plan>\n{json.dumps(FULL)}\n</proposed_plan>"

    assert parse_plan(reply) == EXPECTED


def test_a_fence_inside_proposed_plan_tags_is_a_plan() -> None:
    reply = f"<proposed_plan>\n```json\n{json.dumps(FULL)}\n```\n</proposed_plan>"

    assert parse_plan(reply) == EXPECTED


def test_only_goal_and_steps_are_required() -> None:
    assert parse_plan(json.dumps(MINIMAL)) == Plan(
        goal="g", steps=(PlanStep(step_number=1, action="a"),)
    )


@pytest.mark.parametrize("missing", ["goal", "steps"])
def test_a_plan_without_a_required_field_is_not_a_plan(missing: str) -> None:
    data = {k: v for k, v in FULL.items() if k != missing}

    assert parse_plan(json.dumps(data)) is None


def test_a_plan_with_no_steps_is_not_a_plan() -> None:
    assert parse_plan(json.dumps({"goal": "g", "steps": []})) is None


def test_a_blank_goal_is_not_a_plan() -> None:
    assert parse_plan(json.dumps({"goal": "  ", "steps": [{"action": "a"}]})) is None


def test_a_step_without_an_action_is_not_a_plan() -> None:
    assert parse_plan(json.dumps({"goal": "g", "steps": [{"reason": "r"}]})) is None


@pytest.mark.parametrize(
    "field, value",
    [
        ("goal", {"nested": "object"}),
        ("steps", "do everything"),
        ("risks", {"a": 1}),
        ("prerequisites", [["nested"]]),
        ("estimated_total_time", ["1 h"]),
    ],
)
def test_a_field_of_the_wrong_type_is_not_a_plan(field: str, value: object) -> None:
    assert parse_plan(json.dumps({**FULL, field: value})) is None


@pytest.mark.parametrize(
    "step",
    [
        {"action": "a", "step_number": "first"},
        {"action": "a", "step_number": True},
        {"action": "a", "tools_needed": [1, {"x": 2}]},
        {"action": "a", "reason": ["list"]},
        42,
    ],
)
def test_a_step_of_the_wrong_shape_is_not_a_plan(step: object) -> None:
    assert parse_plan(json.dumps({"goal": "g", "steps": [step]})) is None


def test_a_missing_step_number_is_the_steps_position() -> None:
    plan = parse_plan(json.dumps({"goal": "g", "steps": [{"action": "a"}, {"action": "b"}]}))

    assert plan is not None
    assert [step.step_number for step in plan.steps] == [1, 2]


def test_a_step_given_as_text_is_its_action() -> None:
    plan = parse_plan(json.dumps({"goal": "g", "steps": ["look", "leap"]}))

    assert plan is not None
    assert [(s.step_number, s.action) for s in plan.steps] == [(1, "look"), (2, "leap")]


def test_numbers_in_text_fields_are_read_as_text() -> None:
    plan = parse_plan(
        json.dumps({"goal": "g", "steps": [{"action": "a", "estimated_time": 5}], "risks": 3})
    )

    assert plan is not None
    assert plan.steps[0].estimated_time == "5"
    assert plan.risks == ("3",)


def test_one_risk_given_as_text_is_a_list_of_one() -> None:
    plan = parse_plan(json.dumps({**MINIMAL, "risks": "it may rain"}))

    assert plan is not None
    assert plan.risks == ("it may rain",)


def test_braces_and_tags_inside_strings_do_not_confuse_parsing() -> None:
    tricky = {
        "goal": "print {x} and }}{{ then ``` and </proposed_plan>",
        "steps": [{"action": 'write "}" then "{"', "reason": "<proposed_plan>{}"}],
    }

    plan = parse_plan(json.dumps(tricky))

    assert plan is not None
    assert plan.goal == tricky["goal"]
    assert plan.steps[0].action == 'write "}" then "{"'


def test_a_tagged_plan_whose_strings_hold_braces_is_a_plan() -> None:
    tricky = {"goal": "match { and }", "steps": [{"action": "balance {{{"}]}

    plan = parse_plan(f"<proposed_plan>{json.dumps(tricky)}</proposed_plan>")

    assert plan is not None
    assert plan.steps[0].action == "balance {{{"


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I would start by reading the code.",
        "{not json}",
        '{"goal": "g", "steps": [{"action": "a"}]',  # unterminated
        "[1, 2, 3]",
        '"a string"',
        "null",
        "<proposed_plan>not json</proposed_plan>",
        "```json\n{broken\n```",
        "Here: " + json.dumps(MINIMAL),  # bare JSON must be the whole reply
        "[" * 100_000,
    ],
)
def test_garbage_is_not_a_plan(reply: str) -> None:
    assert parse_plan(reply) is None


def test_the_first_complete_plan_wins() -> None:
    second = {"goal": "second", "steps": ["b"]}
    reply = (
        '```json\n{"goal": "no steps"}\n```\n'
        f"```json\n{json.dumps(MINIMAL)}\n```\n```json\n{json.dumps(second)}\n```"
    )

    plan = parse_plan(reply)

    assert plan is not None
    assert plan.goal == "g"


def test_a_plans_json_reads_back_to_the_same_plan() -> None:
    assert parse_plan(plan_json(EXPECTED)) == EXPECTED


def test_a_plans_dict_has_every_field_of_the_format() -> None:
    data = plan_to_dict(EXPECTED)

    assert set(data) == {"goal", "steps", "estimated_total_time", "risks", "prerequisites"}
    assert set(data["steps"][0]) == {
        "step_number",
        "action",
        "reason",
        "tools_needed",
        "estimated_time",
        "files",
    }


_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1).filter(str.strip)


@given(
    goal=_text,
    actions=st.lists(_text, min_size=1, max_size=5),
    risks=st.lists(_text, max_size=3),
)
def test_any_plan_round_trips_through_its_json(
    goal: str, actions: list[str], risks: list[str]
) -> None:
    plan = Plan(
        goal=goal.strip(),
        steps=tuple(
            PlanStep(step_number=n, action=a.strip()) for n, a in enumerate(actions, start=1)
        ),
        risks=tuple(r.strip() for r in risks),
    )

    assert parse_plan(plan_json(plan)) == plan
    assert parse_plan(f"<proposed_plan>{plan_json(plan)}</proposed_plan>") == plan


def test_rendering_shows_the_goal_and_numbered_steps_with_details() -> None:
    text = render_plan(EXPECTED)

    assert text.splitlines()[:6] == [
        "Goal: Add a --mode flag",
        "",
        "Steps:",
        "  1. Read the argument parser",
        "     Why: learn its conventions",
        "     Tools: read_file, grep",
    ]


def test_rendering_ends_with_time_prerequisites_and_risks() -> None:
    text = render_plan(EXPECTED)

    assert text.endswith(
        "Estimated total time: 15 min\n\n"
        "Prerequisites:\n  - a clean working tree\n\n"
        "Risks:\n  - abbreviation clash with --model"
    )


def test_rendering_leaves_out_what_the_plan_does_not_say() -> None:
    text = render_plan(Plan(goal="g", steps=(PlanStep(step_number=1, action="a"),)))

    assert text == "Goal: g\n\nSteps:\n  1. a"


def test_a_fence_inside_a_fenced_plans_strings_does_not_cut_it_short() -> None:
    tricky = {"goal": "show the fence", "steps": [{"action": "write ```\nthen stop"}]}

    plan = parse_plan(f"Plan:\n```json\n{json.dumps(tricky)}\n```")

    assert plan is not None
    assert plan.steps[0].action == "write ```\nthen stop"


def test_a_closing_tag_inside_a_tagged_plans_strings_does_not_cut_it_short() -> None:
    tricky = {"goal": "quote </proposed_plan> literally", "steps": ["a"]}

    plan = parse_plan(f"<proposed_plan>{json.dumps(tricky)}</proposed_plan>")

    assert plan is not None
    assert plan.goal == "quote </proposed_plan> literally"


def test_a_reply_of_many_fences_is_read_in_bounded_time() -> None:
    assert parse_plan("```json\n{}\n" * 5_000) is None


def test_a_plan_after_many_other_code_blocks_is_found() -> None:
    blocks = "".join(f"```python\nprint({n})\n```\n" for n in range(100))

    assert parse_plan(f"{blocks}```json\n{json.dumps(MINIMAL)}\n```") is not None
