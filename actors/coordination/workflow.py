"""The two workflow tools and the rule that every round ends in exactly one call to them."""

from __future__ import annotations

import json

import attrs

from conclave.actors.llm.protocol import ChatMessage, ToolSchema
from conclave.actors.loop.terminals import Final, Proceed, Violation, not_offered_error, unoffered

__all__ = [
    "NewAnswer",
    "Vote",
    "WorkflowError",
    "WorkflowTerminal",
    "parse_workflow_call",
    "workflow_tools",
]

NEW_ANSWER = ToolSchema(
    name="new_answer",
    description="Submit a complete new answer to the task.",
    parameters={
        "type": "object",
        "properties": {"content": {"type": "string", "description": "The full answer."}},
        "required": ["content"],
    },
)

VOTE = ToolSchema(
    name="vote",
    description="Vote for the agent whose current answer is best (you may vote for yourself).",
    parameters={
        "type": "object",
        "properties": {
            "agent_id": {"type": "string", "description": "Anonymous id such as agent2."},
            "reason": {"type": "string", "description": "Why this answer is best."},
        },
        "required": ["agent_id", "reason"],
    },
)


def workflow_tools(*, may_answer: bool, may_vote: bool) -> tuple[ToolSchema, ...]:
    return _OFFERS[may_answer, may_vote]


_OFFERS = {
    (answer, vote): tuple(t for t, ok in ((NEW_ANSWER, answer), (VOTE, vote)) if ok)
    for answer in (False, True)
    for vote in (False, True)
}
"""The four offers, made once: every round of every agent takes one."""


@attrs.frozen(kw_only=True)
class NewAnswer:
    content: str
    call_id: str


@attrs.frozen(kw_only=True)
class Vote:
    agent_id: str
    reason: str
    call_id: str


class WorkflowError(Exception):
    """The round's output broke the workflow contract; the text goes back to the model."""


def parse_workflow_call(message: ChatMessage, offered: tuple[ToolSchema, ...]) -> NewAnswer | Vote:
    names = [t.name for t in offered]
    calls = message.tool_calls
    if not calls:
        raise WorkflowError(
            f"You must end this turn with exactly one workflow tool call ({' or '.join(names)}); "
            "you made none."
        )
    if len(calls) > 1:
        made = ", ".join(c.name for c in calls)
        raise WorkflowError(
            f"You made {len(calls)} tool calls ({made}); make exactly one of {' or '.join(names)}."
        )
    call = calls[0]
    if call.name not in names:
        raise WorkflowError(
            f"Tool {call.name!r} is not available now; the available tools are: {', '.join(names)}."
        )
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise WorkflowError(
            f"The arguments of {call.name} are not valid JSON ({exc.msg})."
        ) from None
    if not isinstance(args, dict):
        raise WorkflowError(f"The arguments of {call.name} must be a JSON object.")
    if call.name == "new_answer":
        content = args.get("content")
        if not isinstance(content, str) or not content.strip():
            raise WorkflowError("new_answer needs a non-empty string 'content'.")
        return NewAnswer(content=content, call_id=call.id)
    agent_id = args.get("agent_id")
    if not isinstance(agent_id, str) or not agent_id:
        raise WorkflowError("vote needs a string 'agent_id' such as agent2.")
    reason = args.get("reason", "")
    return Vote(agent_id=agent_id, reason=str(reason), call_id=call.id)


WORKFLOW_TOOLS = frozenset({NEW_ANSWER.name, VOTE.name})


@attrs.frozen
class WorkflowTerminal:
    """A coordination round's contract: exactly one workflow call, alone in its reply, is final.

    Text only, a workflow call mixed with other calls, or a call to a tool that was not
    offered is a violation (the error goes back to the model and counts as a try). Calls to
    offered tools that are not workflow tools mean: run them and continue.
    """

    def judge(
        self, reply: ChatMessage, offered: tuple[ToolSchema, ...]
    ) -> Final[NewAnswer | Vote] | Proceed | Violation:
        calls = reply.tool_calls
        workflow = tuple(t for t in offered if t.name in WORKFLOW_TOOLS)
        if calls and not any(c.name in WORKFLOW_TOOLS for c in calls):
            stray = unoffered(calls, offered)
            if stray is not None:
                return Violation(error=not_offered_error(stray, offered))
            return Proceed()
        # A reply with a workflow call is judged as today: how many calls first, then
        # whether the one call was offered (the workflow parser's messages).
        try:
            return Final(value=parse_workflow_call(reply, workflow))
        except WorkflowError as exc:
            return Violation(error=str(exc))
