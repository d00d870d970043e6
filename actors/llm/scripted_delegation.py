"""The scripted backend's delegation: a PAOR agent with ``subtasks`` delegates them.

Offered ``submit_plan`` in its first iteration, the agent plans each configured sub-task as
a delegated step (with its dependencies) before its own tool steps; later iterations, and a
plan refused because sub-agents may not nest there, plan only its own steps. Its reflection
reports what its sub-agents said (read back from the observations, as a model reads them).

A sub-agent's transcript names its task (:func:`~actors.paor.subagent_prompts.read_subtask`):
the script finds the configured sub-task with that task and makes its tool steps; an
explore sub-agent's reflection summarises what its calls returned, the first line of each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson

from conclave.actors.llm.protocol import ChatMessage, ToolCall
from conclave.actors.paor.subagent_prompts import read_subtask
from conclave.config.schema import ScriptedBackendConfig
from conclave.config.schema.backends import ScriptedSubTask, ToolStep
from conclave.config.schema.paor import SubAgentKind

__all__ = ["delegation_reply", "scripted_steps"]

_REPORTED = re.compile(r"^\d+\. sub-agent:(\w+) (\{.*?\}) \([\d.]+s\) -> (.*)$", re.MULTILINE)
"""A sub-agent's report among the observations (``describe_observations``' line)."""
_REFUSED = "cannot nest deeper"
_SHOWN = 160
"""Characters of each call's first line an explore summary quotes."""


def scripted_steps(
    policy: ScriptedBackendConfig, messages: Sequence[ChatMessage]
) -> tuple[Sequence[ToolStep], ScriptedSubTask | None]:
    """The tool steps of the agent whose transcript this is (a sub-agent makes its
    sub-task's), and its sub-task (``None`` for the agent itself, or an unknown task)."""
    sub = read_subtask(messages)
    if sub is None:
        return policy.tool_steps, None
    _, task = sub
    for subtask in policy.subtasks:
        if subtask.task == task:
            return subtask.tool_steps, subtask
    return (), None


def delegation_reply(
    policy: ScriptedBackendConfig,
    messages: Sequence[ChatMessage],
    offered: set[str],
    results: Sequence[str],
    failed: int,
    call_id: str,
) -> ChatMessage | None:
    """The plan or reflection that delegation changes; ``None`` where it changes nothing.
    ``results``: the tool steps' results in the transcript, in order."""
    steps, subtask = scripted_steps(policy, messages)
    if read_subtask(messages) is not None:
        explore = subtask is not None and subtask.delegate is SubAgentKind.EXPLORE
        if offered == {"reflect"} and explore:
            return _explored(results, steps, failed, call_id)
        return None
    if not policy.subtasks:
        return None
    shown = "\n".join(m.content for m in messages if m.role == "user")
    reported = list(dict.fromkeys(_REPORTED.findall(shown)))  # shown twice with own steps
    if offered == {"submit_plan"}:
        refused = any(m.role == "tool" and _REFUSED in m.content for m in messages)
        delegate = not reported and not refused
        return _call(call_id, "submit_plan", _plan(policy.subtasks if delegate else (), steps))
    if offered == {"reflect"} and reported:
        done = len(results)
        said = "; ".join(f"{kind} {_step(args)}: {first}" for kind, args, first in reported)
        return _call(
            call_id,
            "reflect",
            {
                "goal_achieved": done >= len(steps) and not failed,
                "progress": f"made {done} of {len(steps)} own steps; sub-agents: {said}",
                "next": "" if done >= len(steps) else "make the rest of my steps",
                "stuck": False,
                "needs_user": "",
            },
        )
    return None


def _plan(subtasks: Sequence[ScriptedSubTask], steps: Sequence[ToolStep]) -> dict[str, object]:
    delegated = [
        {
            "id": s.id,
            "action": s.task,
            "delegate": s.delegate.value,
            "depends_on": list(s.depends_on),
        }
        for s in subtasks
    ]
    own = [
        {
            "id": f"own{n}",
            "action": f"call {step.tool}",
            "tools": [step.tool],
            "depends_on": [f"own{n - 1}"] if n > 1 else [],
        }
        for n, step in enumerate(steps, 1)
    ]
    if not delegated and not own:
        own = [{"id": "own1", "action": "answer from what I know"}]
    return {"goal": "carry out the task", "steps": delegated + own}


def _explored(
    results: Sequence[str], steps: Sequence[ToolStep], failed: int, call_id: str
) -> ChatMessage:
    """An explore sub-agent's reflection: its summary is what its calls returned."""
    seen = [
        f"{step.tool}: {(result.strip().splitlines() or [''])[0][:_SHOWN]}"
        for step, result in zip(steps, results, strict=False)
    ]
    summary = f"Explored with {len(results)} calls. " + " | ".join(seen)
    return _call(
        call_id,
        "reflect",
        {
            "goal_achieved": len(results) >= len(steps) and not failed,
            "progress": summary,
            "next": "",
            "stuck": False,
            "needs_user": "",
        },
    )


def _step(arguments: str) -> str:
    try:
        step = orjson.loads(arguments).get("step", "?")
    except orjson.JSONDecodeError:
        return "?"
    return f"step {step}"


def _call(call_id: str, name: str, arguments: object) -> ChatMessage:
    call = ToolCall(id=call_id, name=name, arguments=orjson.dumps(arguments).decode())
    return ChatMessage(role="assistant", tool_calls=(call,))
