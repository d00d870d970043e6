"""What a sub-agent is told: its task, what its kind may do, and what its parent's earlier
sub-agents found. The first line names its kind and task, so a scripted model can read them
back (:func:`read_subtask`)."""

from __future__ import annotations

from collections.abc import Sequence

from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.paor.plan import SubAgentKind

__all__ = ["read_subtask", "subtask_prompt"]

_HEAD = "Sub-task for a sub-agent ("
_KIND = {
    SubAgentKind.EXPLORE: (
        "You are an explore sub-agent: your tools are read-only. Look, change nothing, and "
        "when you reflect with the goal achieved, your progress is the summary your parent "
        "reads: what the code is and where things are, concisely."
    ),
    SubAgentKind.WORKER: (
        "You are a worker sub-agent with your parent's tools: carry the task out; your "
        "final progress is the summary your parent reads."
    ),
}


def subtask_prompt(kind: SubAgentKind, task: str, context: str) -> str:
    found = f"\n\nWhat the steps before yours found:\n{context}" if context else ""
    return f"{_HEAD}{kind.value}): {task}\n\n{_KIND[kind]}{found}"


def read_subtask(messages: Sequence[ChatMessage]) -> tuple[SubAgentKind, str] | None:
    """The kind and task of the sub-agent whose transcript ``messages`` is; ``None`` when it
    is not a sub-agent's."""
    first = next((m for m in messages if m.role == "user"), None)
    if first is None or not first.content.startswith(_HEAD):
        return None
    head = first.content.split("\n", 1)[0][len(_HEAD) :]
    kind, _, task = head.partition("): ")
    kinds = {k.value: k for k in SubAgentKind}
    return (kinds[kind], task) if kind in kinds else None
