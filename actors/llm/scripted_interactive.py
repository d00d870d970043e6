"""The scripted backend's interactive policy: what it does when it plays the interactive agent.

It reads the conversation as a model would (the system message says it is the interactive
agent, :func:`actors.prompts.interactive.is_interactive`) and decides from the last message:

- a ``launch_run`` result: it reports it in a sentence (the run's status, winner, rounds, the
  final answer's first lines, the workspace path), or that the run was not approved;
- an error fed back (a ``launch_run`` the launcher refused): it says what went wrong;
- the person's message: a short question (ending in ``?``, at most
  :data:`SHORT_QUESTION_WORDS` words) is answered directly (one about what was asked
  ``earlier`` or ``before`` lists the person's earlier messages: the conversation it was
  given); anything else launches a run with the message as its task. A message that mentions
  a plan (``plan``, ``planning``) launches a planning run, executed afterwards unless the
  message says ``only plan`` / ``just plan``; ``single agent`` or ``one agent`` launches one
  agent.

Deterministic: the same conversation gives the same reply, so the REPL's and the headless
end-to-end tests see the same turns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

from conclave.actors.llm.protocol import ChatMessage, ToolCall

__all__ = ["SHORT_QUESTION_WORDS", "interactive_reply", "launch_arguments"]

SHORT_QUESTION_WORDS = 12
_PLAN = re.compile(r"\bplan(?:ning)?\b", re.IGNORECASE)
_PLAN_ONLY = re.compile(r"\b(?:only|just) plan\b", re.IGNORECASE)
_SINGLE = re.compile(r"\b(?:single|one) agent\b", re.IGNORECASE)
_AGENTS = re.compile(r"<AGENTS ([0-9a-f]{12})>\n(.*?)\n</AGENTS \1>", re.DOTALL)
_EARLIER = re.compile(r"\b(?:earlier|before)\b", re.IGNORECASE)
_PREVIEW = 300


def interactive_reply(messages: Sequence[ChatMessage], call_id: str) -> ChatMessage:
    """The interactive agent's next message (see the module docstring)."""
    last = messages[-1] if messages else ChatMessage(role="user", content="")
    if last.role == "tool":
        return _text(_report(last.content))
    if last.role == "user" and last.content.startswith("Error:"):
        return _text(f"I could not do that: {last.content.removeprefix('Error:').strip()}")
    question = last.content.strip()
    if _is_short_question(question):
        return _text(_direct_answer(question, messages))
    arguments = launch_arguments(question)
    call = ToolCall(id=call_id, name="launch_run", arguments=orjson.dumps(arguments).decode())
    return ChatMessage(role="assistant", tool_calls=(call,))


def launch_arguments(message: str) -> dict[str, Any]:
    """The ``launch_run`` arguments the policy sends for ``message``."""
    arguments: dict[str, Any] = {"task": message}
    if _SINGLE.search(message):
        arguments["agent_mode"] = "single"
    if _PLAN.search(message):
        arguments["planning_mode"] = True
        arguments["execute_after_planning"] = not _PLAN_ONLY.search(message)
    return arguments


def _is_short_question(text: str) -> bool:
    return text.endswith("?") and len(text.split()) <= SHORT_QUESTION_WORDS


def _direct_answer(question: str, messages: Sequence[ChatMessage]) -> str:
    system = messages[0].content if messages and messages[0].role == "system" else ""
    agents = _AGENTS.search(system)
    ids = [line.split(":", 1)[0] for line in agents.group(2).splitlines()] if agents else []
    if "agent" in question.lower() and ids:
        return f"No run needed: {len(ids)} agents are configured: {', '.join(ids)}."
    if _EARLIER.search(question):
        asked = [m.content for m in messages[1:-1] if m.role == "user"]
        listed = "; ".join(f"“{text}”" for text in asked) or "nothing yet"
        return f"No run needed: earlier you asked {listed}."
    return (
        f"No run needed for “{question}”: a short question gets a short answer from me. "
        "Ask me to do something bigger and I will launch a run of the agents."
    )


def _report(content: str) -> str:
    if content.startswith("Error:"):
        return f"The run could not be launched: {content.removeprefix('Error:').strip()}"
    try:
        outcome = json.loads(content)
    except json.JSONDecodeError:
        return f"The run ended, but its result could not be read: {content[:_PREVIEW]}"
    status = outcome.get("status")
    if status == "not_approved":
        return f"The run was not launched ({outcome.get('reason', 'cancelled')}). What next?"
    summary = outcome.get("coordination_summary") or {}
    parts = [f"The run {outcome.get('run_id')} ended {status}"]
    if outcome.get("planning_run") is not None:
        parts[0] = f"Planned, then executed the plan: {parts[0]}"
    if summary.get("winner"):
        parts.append(f"winner {summary['winner']} after {summary.get('rounds', 0)} rounds")
    answer = (outcome.get("final_answer") or "(no final answer)").strip()
    text = "; ".join(parts) + f".\n\n{answer[:_PREVIEW]}"
    if outcome.get("workspace_path"):
        text += f"\n\nWorkspace: {outcome['workspace_path']}"
    if outcome.get("reason"):
        text += f"\n\nNote: {outcome['reason']}"
    return text


def _text(content: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=content)
