"""``submit_plan``'s delegated steps: which sub-agent, what they may depend on, and where
delegation is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conclave.actors.paor.plan import BadPlan, SubAgentKind, parse_plan

TOOLS = frozenset({"search", "edit_file"})


def _plan(*steps: dict[str, Any]) -> str:
    return json.dumps({"goal": "rename", "steps": list(steps)})


def _sub(ident: str, kind: str = "explore", *after: str) -> dict[str, Any]:
    return {"id": ident, "action": f"look {ident}", "delegate": kind, "depends_on": list(after)}


def test_a_delegated_step_names_its_sub_agents_kind() -> None:
    plan = parse_plan(_plan(_sub("a"), _sub("b", "worker", "a")), TOOLS)
    assert [(s.id, s.delegate) for s in plan.delegated] == [
        ("a", SubAgentKind.EXPLORE),
        ("b", SubAgentKind.WORKER),
    ]
    assert plan.own == ()


def test_the_agents_own_steps_may_depend_on_delegated_ones() -> None:
    own = {"id": "1", "action": "edit", "tools": ["edit_file"], "depends_on": ["a"]}
    plan = parse_plan(_plan(_sub("a"), own), TOOLS)
    assert [s.id for s in plan.own] == ["1"]
    assert "a. look a [sub-agent: explore]" in plan.describe()


def test_a_delegated_step_may_not_depend_on_the_agents_own_step() -> None:
    own = {"id": "1", "action": "search", "tools": ["search"]}
    with pytest.raises(BadPlan, match="delegated step a depends on 1, which you carry out"):
        parse_plan(_plan(own, _sub("a", "explore", "1")), TOOLS)


def test_an_unknown_kind_of_sub_agent_is_refused_naming_the_kinds() -> None:
    with pytest.raises(BadPlan, match=r"steps\[0\].delegate must be one of explore, worker"):
        parse_plan(_plan(_sub("a", "intern")), TOOLS)


def test_where_sub_agents_may_not_nest_a_delegated_step_is_refused() -> None:
    with pytest.raises(BadPlan, match=r"cannot nest deeper here \(paor.max_depth\)"):
        parse_plan(_plan(_sub("a")), TOOLS, may_delegate=False)


def test_a_cycle_among_delegated_steps_is_refused_naming_it() -> None:
    with pytest.raises(BadPlan, match="form a cycle: a -> b -> a"):
        parse_plan(_plan(_sub("a", "explore", "b"), _sub("b", "explore", "a")), TOOLS)
