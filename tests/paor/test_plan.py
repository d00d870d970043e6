"""``submit_plan``'s arguments: what a plan must hold, its dependency order, and cycles
refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conclave.actors.paor.plan import BadPlan, parse_plan, waves

TOOLS = frozenset({"search", "edit_file", "run_shell"})


def _plan(*steps: dict[str, Any]) -> str:
    return json.dumps({"goal": "rename", "steps": list(steps)})


def _step(ident: str, *depends: str, tool: str = "search") -> dict[str, Any]:
    return {"id": ident, "action": f"do {ident}", "tools": [tool], "depends_on": list(depends)}


def test_a_dependency_cycle_is_refused_naming_the_cycle() -> None:
    arguments = _plan(_step("a"), _step("b", "a", "d"), _step("c", "b"), _step("d", "c"))
    with pytest.raises(BadPlan, match=r"form a cycle: b -> d -> c -> b; a step cannot wait"):
        parse_plan(arguments, TOOLS)


def test_a_step_that_depends_on_itself_is_a_cycle() -> None:
    with pytest.raises(BadPlan, match="cycle: a -> a"):
        parse_plan(_plan(_step("a", "a")), TOOLS)


def test_steps_come_in_waves_of_independent_steps_in_dependency_order() -> None:
    plan = parse_plan(
        _plan(_step("test", "edit1", "edit2"), _step("edit1", "find"), _step("edit2", "find"),
              _step("find")),
        TOOLS,
    )  # fmt: skip
    assert [[s.id for s in wave] for wave in waves(plan)] == [
        ["find"],
        ["edit1", "edit2"],
        ["test"],
    ]
    assert plan.describe().splitlines()[1:] == [
        "find. do find [tools: search]",
        "edit1. do edit1 [tools: search] (after find)",
        "edit2. do edit2 [tools: search] (after find)",
        "test. do test [tools: search] (after edit1, edit2)",
    ]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ("not json", "not JSON"),
        (json.dumps({"goal": "", "steps": [_step("a")]}), "needs a goal"),
        (json.dumps({"goal": "g", "steps": []}), "needs steps"),
        (_plan(_step("a"), _step("a")), "a appear more than once"),
        (_plan(_step("a", "z")), "step a depends on z, which the plan does not have"),
        (_plan(_step("a", tool="rm_rf")), "names tools that are not available: rm_rf"),
    ],
)
def test_a_plan_that_does_not_hold_together_says_what_is_wrong(arguments: str, error: str) -> None:
    with pytest.raises(BadPlan, match=error):
        parse_plan(arguments, TOOLS)
