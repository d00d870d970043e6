"""The scripted backend's PAOR policy: plan the configured tool steps, make them, reflect.

In a PAOR round (its transcript holds :data:`~actors.paor.prompts.PAOR_NOTE`) the script
answers each phase as a model would: offered ``submit_plan`` alone, it plans one step per
configured tool step; while acting, it makes the next tool step (counted from the step
results in the transcript, as in a free round) and, when all are made, says so in text;
offered ``reflect`` alone, it reports what it did and that the goal is achieved once every
step is made and none failed (a failed step is not retried: the round then runs until
``max_iterations``, which is how a test makes one). With ``paor_question`` configured, the
reflection asks it (``needs_user``) until the user's answer is in the transcript; with
``paor_stuck``, that many first reflections say the round is stuck. With no tool steps
its reflection reports the answer it would give in a free round (so a panel's answers
differ).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from conclave.actors.human.questions import ANSWER_PREFIXES
from conclave.actors.llm.protocol import ChatMessage, ToolCall
from conclave.actors.paor.prompts import PAOR_NOTE
from conclave.config.schema.backends import ToolStep

__all__ = ["answered", "in_paor", "paor_phase_reply", "reflections"]


def in_paor(messages: Sequence[ChatMessage]) -> bool:
    return any(m.role == "user" and m.content == PAOR_NOTE for m in messages)


def reflections(messages: Sequence[ChatMessage]) -> int:
    """How many reflections the round has made so far."""
    return sum(1 for m in messages for call in m.tool_calls if call.name == "reflect")


def answered(messages: Sequence[ChatMessage]) -> bool:
    """Whether the user's answer to a reflection's question is in the transcript (a PAOR
    round appends it as a user message: :func:`~actors.human.questions.reply_text`)."""
    return any(m.role == "user" and m.content.startswith(ANSWER_PREFIXES) for m in messages)


def paor_phase_reply(
    steps: Sequence[ToolStep],
    offered: set[str],
    done: int,
    failed: int,
    call_id: str,
    answer: str,
    question: str = "",
    stuck: bool = False,
) -> ChatMessage | None:
    """The reply for the phase the offered tools show; ``None`` while acting with a step
        left (the caller makes it, as in a free round). ``failed``: how many of the steps made
        failed (a failed step keeps the goal from being achieved). ``answer``: what the script
    would answer in a free round, the progress it reports when it has no steps to make.
    ``question``: what the reflection asks the user (``needs_user``; the goal is then not
    achieved), empty when there is nothing to ask. ``stuck``: the reflection says it is
    stuck (and not done)."""
    if offered == {"submit_plan"}:
        plan = {
            "goal": "carry out the task",
            "steps": [
                {
                    "id": str(n),
                    "action": f"call {step.tool}",
                    "tools": [step.tool],
                    "depends_on": [str(n - 1)] if n > 1 else [],
                }
                for n, step in enumerate(steps, 1)
            ]
            or [{"id": "1", "action": "answer from what I know"}],
        }
        return _call(call_id, "submit_plan", plan)
    if offered == {"reflect"}:
        made = ", ".join(step.tool for step in steps[:done]) or "no tool calls"
        left = ", ".join(step.tool for step in steps[done:])
        failures = f"; {failed} failed" if failed else ""
        reflection = {
            "goal_achieved": done >= len(steps) and not (failed or question or stuck),
            "progress": f"made {done} of {len(steps)} steps ({made}){failures}"
            if steps
            else answer,
            "next": f"make {left}" if left else ("fix what failed" if failed else ""),
            "stuck": stuck,
            "needs_user": question,
        }
        return _call(call_id, "reflect", reflection)
    if done >= len(steps):
        return ChatMessage(role="assistant", content=f"Made the {len(steps)} planned steps.")
    return None


def _call(call_id: str, name: str, arguments: object) -> ChatMessage:
    call = ToolCall(id=call_id, name=name, arguments=orjson.dumps(arguments).decode())
    return ChatMessage(role="assistant", tool_calls=(call,))
