"""WorkflowTerminal: a coordination round's contract, judged on one reply."""

from __future__ import annotations

import json

from conclave.actors.coordination.workflow import (
    NEW_ANSWER,
    VOTE,
    NewAnswer,
    Vote,
    WorkflowTerminal,
)
from conclave.actors.llm.protocol import ChatMessage, ToolCall, ToolSchema
from conclave.actors.loop import Final, Proceed, Violation

READ = ToolSchema(name="read_file", description="read", parameters={}, read_only=True)
OFFERED = (NEW_ANSWER, VOTE, READ)
TERMINAL = WorkflowTerminal()


def reply(*calls: tuple[str, dict[str, str]], content: str = "") -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=content,
        tool_calls=tuple(
            ToolCall(id=f"c{i}", name=name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(calls)
        ),
    )


def test_one_new_answer_alone_is_final() -> None:
    verdict = TERMINAL.judge(reply(("new_answer", {"content": "42"})), OFFERED)
    assert verdict == Final(value=NewAnswer(content="42", call_id="c0"))


def test_one_vote_alone_is_final() -> None:
    verdict = TERMINAL.judge(reply(("vote", {"agent_id": "agent2", "reason": "best"})), OFFERED)
    assert verdict == Final(value=Vote(agent_id="agent2", reason="best", call_id="c0"))


def test_text_without_a_call_is_a_violation() -> None:
    verdict = TERMINAL.judge(reply(content="I think agent2 is right"), OFFERED)
    assert isinstance(verdict, Violation)
    assert "exactly one workflow tool call (new_answer or vote); you made none" in verdict.error


def test_a_workflow_call_mixed_with_another_call_is_a_violation() -> None:
    verdict = TERMINAL.judge(
        reply(("read_file", {"path": "a"}), ("new_answer", {"content": "42"})), OFFERED
    )
    assert isinstance(verdict, Violation)
    assert "You made 2 tool calls" in verdict.error


def test_a_call_to_a_tool_that_was_not_offered_is_a_violation() -> None:
    verdict = TERMINAL.judge(reply(("run_shell", {"command": "ls"})), OFFERED)
    assert isinstance(verdict, Violation)
    assert "'run_shell' is not available now" in verdict.error


def test_a_workflow_tool_that_was_not_offered_is_a_violation() -> None:
    verdict = TERMINAL.judge(reply(("vote", {"agent_id": "agent1"})), (NEW_ANSWER, READ))
    assert isinstance(verdict, Violation)
    assert "'vote' is not available now" in verdict.error


def test_calls_to_offered_tools_mean_continue() -> None:
    verdict = TERMINAL.judge(reply(("read_file", {"path": "a"}), ("read_file", {})), OFFERED)
    assert verdict == Proceed()


def test_malformed_workflow_arguments_are_a_violation() -> None:
    bad = ChatMessage(
        role="assistant",
        tool_calls=(ToolCall(id="c0", name="new_answer", arguments='{"content": '),),
    )
    verdict = TERMINAL.judge(bad, OFFERED)
    assert isinstance(verdict, Violation)
    assert "not valid JSON" in verdict.error
