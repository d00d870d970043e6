"""The answer of a round that ran out of steps: what it did, instead of nothing.

A round that used every step (``orchestrator.max_steps_per_round``) without its workflow
call used to exclude its agent and lose its work. Its transcript says what it did, so that
becomes its answer: each tool call it made, and what the last one returned. Peers and the
user can build on that, and the agent's next round can go on from it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from conclave.actors.agent.protocol import RoundOutcome
from conclave.actors.agent.settled import Settled
from conclave.actors.coordination.workflow import NewAnswer
from conclave.actors.llm.protocol import ChatMessage, ToolCall
from conclave.config.schema import InFlightPolicy

if TYPE_CHECKING:
    from conclave.actors.agent.rounds import Rounds

__all__ = ["out_of_steps_report", "submit_answer"]

_ARGUMENTS = 120
"""Characters of a call's arguments shown."""
_LAST_OUTPUT = 600
"""Characters of the last tool result shown."""


def out_of_steps_report(messages: Sequence[ChatMessage], steps: int) -> str:
    """The progress report of a round whose ``messages`` ran out of its ``steps``."""
    calls = [call for m in messages if m.role == "assistant" for call in m.tool_calls]
    results = [m for m in messages if m.role == "tool"]
    lines = [
        f"Progress report: the round used all {steps} of its steps before it finished, "
        f"after {len(calls)} tool calls."
    ]
    if calls:
        lines.append("Done so far:")
        lines += [f"- {call.name} {_cut(call.arguments, _ARGUMENTS)}" for call in calls]
    if results:
        lines.append(f"The last call returned: {_cut(results[-1].content, _LAST_OUTPUT)}")
    lines.append("Left to do: whatever the task asks beyond the calls above.")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def submit_answer(
    rounds: Rounds, content: str, kind: str, policy: InFlightPolicy, refused: str
) -> Settled:
    """Submit ``content`` as the round's ``new_answer``, as if the model had called it (the
    call is appended to the transcript, so the agent's next round sees what it answered).
    A refusal fails the round with ``refused`` as the reason."""
    transcript = rounds.memory.transcript
    assert transcript is not None
    call = ToolCall(
        id=f"{kind}-{rounds.memory.round}",
        name="new_answer",
        arguments=json.dumps({"content": content}),
    )
    reply = ChatMessage(role="assistant", tool_calls=(call,))
    transcript.append(reply)
    settled = await rounds.submit(NewAnswer(content=content, call_id=call.id), reply, policy)
    if settled is None:
        return Settled(outcome=RoundOutcome.FAILED, reason=f"{refused}; its answer was refused")
    return settled
