"""Plans from the scripted backend, so plan mode runs end to end with no model.

The scripted backend writes canned text answers (:meth:`ScriptedBackend.compose`). In plan
mode a real model answers with JSON plans instead; :func:`as_plan_reply` turns the scripted
reply into one, reading the mode from the prompt as a model would (the plan-mode prefix of
:mod:`actors.prompts.modes` in the system message):

- a round's ``new_answer`` content becomes a plan whose steps are the text's lines (content
  that already is a plan stays as it is); in a revision run (the person's feedback on a
  plan), it is the conversation's last plan with a step for the feedback;
- a presentation's text becomes one plan: under ``synthesize`` the answers' plans merged
  (steps in order, without repeats), otherwise the presenter's own plan.

Tool calls other than ``new_answer`` (votes, investigation) pass through as they are.

Executing an approved plan, a scripted agent offered ``update_plan`` marks each step in
progress, then done, before its other tool steps (:func:`plan_marks`), so the REPL's live
step list moves with no model.

Outside plan mode the reply is returned unchanged, as the same object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

import attrs

from conclave.actors.coordination.label import Label
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.planning.flow import read_execution_task, read_revision_task
from conclave.actors.planning.plan import Plan, PlanStep, parse_plan, plan_json
from conclave.actors.planning.progress import UPDATE_PLAN, StepStatus
from conclave.actors.prompts.coordination import parse_prompt
from conclave.actors.prompts.modes import is_plan_mode
from conclave.config.schema.backends import ToolStep

__all__ = ["as_plan_reply", "merge_plans", "plan_from_text", "plan_marks", "tagged"]

_NUMBERED = re.compile(r"^\s*\d+[.)]\s*")


def as_plan_reply(messages: Sequence[ChatMessage], reply: ChatMessage) -> ChatMessage:
    """``reply`` as a planning model would have written it, when ``messages`` is a
    plan-mode prompt; else ``reply`` itself."""
    system = next((m.content for m in messages if m.role == "system"), "")
    if not is_plan_mode(system):
        return reply
    view = parse_prompt(messages)
    if view.presentation is not None:
        if reply.tool_calls:  # a step of investigation before presenting: not the answer
            return reply
        answers = [view.answers[label] for label in sorted(view.answers, key=Label.parse)]
        plans = [plan for plan in map(parse_plan, answers) if plan is not None]
        own = parse_plan(view.answers.get(view.own_label or "", ""))
        if view.presentation == "synthesize" and plans:
            chosen = merge_plans(plans)
        else:
            chosen = own or (plans[0] if plans else plan_from_text(view.task, reply.content))
        return attrs.evolve(reply, content=tagged(chosen))
    revised = _revised(messages, view.task)
    calls = tuple(
        attrs.evolve(call, arguments=_planned_arguments(view.task, call.arguments, revised))
        if call.name == "new_answer"
        else call
        for call in reply.tool_calls
    )
    return attrs.evolve(reply, tool_calls=calls)


def _revised(messages: Sequence[ChatMessage], task: str) -> Plan | None:
    """In a revision run, the plan the conversation last proposed with a step for the
    feedback, as a model revising it would answer; ``None`` in any other run. (Composed from
    the revision task's text, the plan's goal and steps read the revision's instructions.)"""
    feedback = read_revision_task(task)
    if feedback is None:
        return None
    proposed = (parse_plan(m.content) for m in reversed(messages) if m.role == "assistant")
    previous = next((plan for plan in proposed if plan is not None), None)
    if previous is None:
        return None
    step = PlanStep(
        step_number=len(previous.steps) + 1,
        action=f"Address the feedback: {feedback}",
        reason="The user asked for it when revising the plan",
        estimated_time="5 min",
    )
    steps = (*previous.steps, step)
    return attrs.evolve(previous, steps=steps, estimated_total_time=f"{5 * len(steps)} min")


def _planned_arguments(task: str, arguments: str, revised: Plan | None = None) -> str:
    """new_answer's arguments with the content made a plan (``revised``, when given);
    malformed ones stay malformed (the scripted backend injects them on purpose)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(parsed, dict) or not isinstance(parsed.get("content"), str):
        return arguments
    content = parsed["content"]
    if parse_plan(content) is None:
        parsed["content"] = tagged(revised or plan_from_text(task, content))
    return json.dumps(parsed, ensure_ascii=False)


def plan_from_text(task: str, text: str) -> Plan:
    """A plan for ``task`` whose steps are the lines of ``text`` (numbering dropped). The
    first line, the scripted answer's heading, is each step's reason, so distinct answers
    stay distinct plans (the coordinator refuses duplicates)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    heading, actions = (lines[0], lines[1:]) if len(lines) > 1 else ("", lines)
    steps = tuple(
        PlanStep(
            step_number=number,
            action=_NUMBERED.sub("", line),
            reason=heading,
            estimated_time="5 min",
        )
        for number, line in enumerate(actions or ["Answer the task directly"], start=1)
    )
    return Plan(
        goal=task.strip()[:200] or "Answer the task",
        steps=steps,
        estimated_total_time=f"{5 * len(steps)} min",
        risks=("The plan is scripted: no model read the task",),
    )


def merge_plans(plans: Iterable[Plan]) -> Plan:
    """One plan from several: the first plan's goal, every step (by action, first seen
    wins) renumbered in order, and every risk and prerequisite once."""
    plans = list(plans)
    actions: dict[str, PlanStep] = {}
    risks: dict[str, None] = {}
    prerequisites: dict[str, None] = {}
    for plan in plans:
        for step in plan.steps:
            actions.setdefault(step.action, step)
        risks.update(dict.fromkeys(plan.risks))
        prerequisites.update(dict.fromkeys(plan.prerequisites))
    steps = tuple(
        attrs.evolve(step, step_number=number)
        for number, step in enumerate(actions.values(), start=1)
    )
    return Plan(
        goal=plans[0].goal,
        steps=steps,
        estimated_total_time=plans[0].estimated_total_time,
        risks=tuple(risks),
        prerequisites=tuple(prerequisites),
    )


def tagged(plan: Plan) -> str:
    """The plan as a planning answer: its JSON inside ``<proposed_plan>`` tags."""
    return f"<proposed_plan>\n{plan_json(plan)}\n</proposed_plan>"


def plan_marks(task: str, offered: Iterable[str]) -> tuple[ToolStep, ...]:
    """The ``update_plan`` calls that walk the plan ``task`` executes, each step in progress
    then done; none when the task executes no plan or ``update_plan`` is not offered."""
    quoted = read_execution_task(task) if UPDATE_PLAN in offered else None
    plan = parse_plan(quoted[0]) if quoted is not None else None
    if plan is None:
        return ()
    return tuple(
        ToolStep(tool=UPDATE_PLAN, arguments={"step_number": step.step_number, "status": status})
        for step in plan.steps
        for status in (StepStatus.IN_PROGRESS.value, StepStatus.DONE.value)
    )
