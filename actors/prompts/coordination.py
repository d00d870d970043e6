"""What the agents read. One module owns the prompt format, and also parses it back, so the
scripted backend reads exactly what a real model would be shown."""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from actors.coordination.protocol import AnswerView
from actors.llm.protocol import ChatMessage

__all__ = ["PromptView", "parse_prompt", "presentation_messages", "round_messages"]

_SYSTEM = (
    "You are {me}, one of {n} agents working on the same task in parallel. "
    "You see the other agents' latest answers, labelled agentN.M (the M-th answer of agentN). "
    "End every turn with exactly one workflow tool call: {tools}. "
    "Call new_answer with a complete answer that improves on what you see; "
    "call vote with the agent id (e.g. agent2) whose answer is best, yourself included. "
    "{persona}"
)
_PERSONA = "Your perspective: {persona}."


def round_messages(
    *,
    me: str,
    agents: int,
    task: str,
    answers: Iterable[AnswerView],
    tools: Iterable[str],
    persona: str,
) -> list[ChatMessage]:
    tool_names = " or ".join(tools) or "none"
    perspective = _PERSONA.format(persona=persona) if persona else ""
    system = _SYSTEM.format(me=me, n=agents, tools=tool_names, persona=perspective).strip()
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=_task_block(task) + _answers_block(answers)),
    ]


def presentation_messages(
    *,
    me: str,
    strategy: str,
    task: str,
    own_label: str,
    answers: Iterable[AnswerView],
    persona: str,
) -> list[ChatMessage]:
    if strategy == "synthesize":
        instruction = (
            "Coordination is over. Write the final answer by merging the best of every answer "
            "below into one complete answer. Reply with the final answer text only."
        )
    else:
        instruction = (
            f"Coordination is over and your answer {own_label} won the vote. Present the final "
            "answer to the user, based on your answer. Reply with the final answer text only."
        )
    system = f"You are {me}. {_PERSONA.format(persona=persona) if persona else ''}".strip()
    body = (
        f"<PRESENTATION strategy={strategy} own={own_label}>\n{instruction}\n</PRESENTATION>\n\n"
        + _task_block(task)
        + _answers_block(answers)
    )
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=body)]


def _task_block(task: str) -> str:
    return f"<ORIGINAL MESSAGE>\n{task}\n</ORIGINAL MESSAGE>\n\n"


def _answers_block(answers: Iterable[AnswerView]) -> str:
    parts = [f"<{a.label}>\n{a.content}\n<end of {a.label}>" for a in answers]
    inner = "\n".join(parts) if parts else "(no answers yet)"
    return f"<CURRENT ANSWERS from the agents>\n{inner}\n</CURRENT ANSWERS>\n"


@attrs.frozen(kw_only=True)
class PromptView:
    """What a prompt says, recovered from its text."""

    me: str
    task: str
    answers: dict[str, str]
    presentation: str | None
    own_label: str | None


_ME = re.compile(r"You are (agent\d+)")
_TASK = re.compile(r"<ORIGINAL MESSAGE>\n(.*?)\n</ORIGINAL MESSAGE>", re.S)
_ANSWER = re.compile(r"<(agent\d+\.\d+)>\n(.*?)\n<end of \1>", re.S)
_PRESENT = re.compile(r"<PRESENTATION strategy=(\w+) own=(\S+)>")


def parse_prompt(messages: Iterable[ChatMessage]) -> PromptView:
    text = "\n".join(m.content for m in messages if m.role in ("system", "user"))
    me = _ME.search(text)
    task = _TASK.search(text)
    present = _PRESENT.search(text)
    return PromptView(
        me=me.group(1) if me else "agent1",
        task=task.group(1) if task else "",
        answers={m.group(1): m.group(2) for m in _ANSWER.finditer(text)},
        presentation=present.group(1) if present else None,
        own_label=present.group(2) if present else None,
    )
