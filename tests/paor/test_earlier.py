"""Reading a round's earlier iterations back from its transcript (a resumed round's)."""

from __future__ import annotations

import json

from conclave.actors.llm.protocol import ChatMessage, ToolCall
from conclave.actors.paor.earlier import earlier_iterations

_PLAN = json.dumps(
    {"goal": "rename", "steps": [{"id": "s", "action": "look", "tools": ["search"]}]}
)
_REFLECTION = json.dumps({"goal_achieved": False, "progress": "searched", "next": "edit"})


def _call(call_id: str, name: str, arguments: str, result: str) -> list[ChatMessage]:
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    return [
        ChatMessage(role="assistant", tool_calls=(call,)),
        ChatMessage(role="tool", content=result, tool_call_id=call_id),
    ]


def test_a_fresh_round_has_no_earlier_iterations() -> None:
    assert earlier_iterations([ChatMessage(role="user", content="Fix")]).iterations == 0


def test_each_accepted_plan_is_an_iteration_with_its_calls_and_reflection() -> None:
    messages = [
        *_call("1", "submit_plan", _PLAN, "Plan accepted."),
        *_call("2", "search", '{"pattern": "x"}', "a.py:1"),
        *_call("3", "search", '{"pattern": "y"}', "Error: no such path"),
        *_call("4", "reflect", _REFLECTION, "Noted."),
    ]

    earlier = earlier_iterations(messages)

    assert earlier.iterations == 1
    assert earlier.plans[0].goal == "rename"
    assert [r.progress for r in earlier.reflections] == ["searched"]
    [seen] = earlier.observations
    assert [(o.tool, o.output, o.success, o.error) for o in seen] == [
        ("search", "a.py:1", True, None),
        ("search", "", False, "no such path"),
    ]


def test_a_refused_plan_or_reflection_is_no_iteration() -> None:
    messages = [
        *_call("1", "submit_plan", "{}", "Error: submit_plan needs a goal"),
        *_call("2", "submit_plan", _PLAN, "Plan accepted."),
        *_call("3", "reflect", "{}", "Error: reflect needs progress"),
    ]

    earlier = earlier_iterations(messages)

    assert (earlier.iterations, earlier.reflections) == (1, ())
