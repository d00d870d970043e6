"""The scripted backend's interactive policy (actors.llm.scripted_interactive)."""

from __future__ import annotations

import json

from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.llm.scripted_interactive import interactive_reply, launch_arguments
from conclave.actors.prompts.interactive import AgentLine, interactive_system_prompt

SYSTEM = ChatMessage(
    role="system", content=interactive_system_prompt(agents=[AgentLine(id="a"), AgentLine(id="b")])
)


def _reply(*messages: ChatMessage) -> ChatMessage:
    return interactive_reply([SYSTEM, *messages], "call_1")


def test_a_short_question_is_answered_in_text() -> None:
    reply = _reply(ChatMessage(role="user", content="What is a nursery?"))
    assert reply.tool_calls == () and "No run needed" in reply.content


def test_a_question_about_the_agents_names_them() -> None:
    reply = _reply(ChatMessage(role="user", content="Which agents do you have?"))
    assert reply.content == "No run needed: 2 agents are configured: a, b."


def test_a_long_question_launches_a_run() -> None:
    words = " ".join(["word"] * 13) + "?"
    [call] = _reply(ChatMessage(role="user", content=words)).tool_calls
    assert call.name == "launch_run" and json.loads(call.arguments) == {"task": words}


def test_a_request_launches_a_run_with_it_as_the_task() -> None:
    [call] = _reply(ChatMessage(role="user", content="Refactor the parser")).tool_calls
    assert json.loads(call.arguments) == {"task": "Refactor the parser"}


def test_a_plan_request_plans_then_executes() -> None:
    assert launch_arguments("Plan the migration") == {
        "task": "Plan the migration",
        "planning_mode": True,
        "execute_after_planning": True,
    }


def test_only_planning_does_not_execute() -> None:
    assert launch_arguments("Only plan the migration")["execute_after_planning"] is False


def test_a_single_agent_request_runs_one_agent() -> None:
    assert launch_arguments("Ask one agent for a name")["agent_mode"] == "single"


def test_a_tool_error_is_reported() -> None:
    reply = _reply(
        ChatMessage(role="user", content="Refactor"),
        ChatMessage(role="tool", content="Error: launch_run: bad", tool_call_id="call_1"),
    )
    assert reply.content == "The run could not be launched: launch_run: bad"


def test_a_refused_run_is_reported_and_the_agent_asks_what_next() -> None:
    result = json.dumps({"status": "not_approved", "reason": "the person cancelled it"})
    reply = _reply(ChatMessage(role="tool", content=result, tool_call_id="call_1"))
    assert reply.content == "The run was not launched (the person cancelled it). What next?"


def test_a_question_about_earlier_messages_lists_them() -> None:
    reply = _reply(
        ChatMessage(role="user", content="Write a poem"),
        ChatMessage(role="assistant", content="Done."),
        ChatMessage(role="user", content="What did I ask before?"),
    )
    assert reply.content == "No run needed: earlier you asked “Write a poem”."
