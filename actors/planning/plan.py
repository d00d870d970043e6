"""A plan: what a planning run answers, parsed from a model's reply and rendered for a person.

A planning agent answers with a JSON plan (the format :mod:`actors.prompts.modes` asks for),
either bare, in a ```json fence, or inside ``<proposed_plan>...</proposed_plan>``. A reply
that has none of these shapes, or whose JSON lacks a required field, is not a plan:
:func:`parse_plan` returns ``None`` and the caller shows the reply as text. Parsing never
raises, whatever a model writes.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

__all__ = ["Plan", "PlanStep", "parse_plan", "plan_json", "plan_to_dict", "render_plan"]


@attrs.frozen(kw_only=True)
class PlanStep:
    """One step of a plan. Only ``action`` is required of a step; a missing ``step_number``
    is the step's position (from 1)."""

    step_number: int
    action: str
    reason: str = ""
    tools_needed: tuple[str, ...] = ()
    estimated_time: str = ""
    files: tuple[str, ...] = ()
    """The files the step creates or changes, as the plan declares them: while the plan
    executes under ``accept-edits``, a write to any other file asks the person."""


@attrs.frozen(kw_only=True)
class Plan:
    """A plan as a planning run proposes it. ``goal`` and ``steps`` are required."""

    goal: str
    steps: tuple[PlanStep, ...]
    estimated_total_time: str = ""
    risks: tuple[str, ...] = ()
    prerequisites: tuple[str, ...] = ()

    def declared_files(self) -> tuple[str, ...] | None:
        """Every file the steps declare, in order, once; ``None`` when no step declares any
        (the plan says nothing about files, so no write is outside it)."""
        files = tuple(dict.fromkeys(path for step in self.steps for path in step.files))
        return files or None


_TAG_OPEN = re.compile(r"<proposed_plan>")
_TAG_CLOSE = re.compile(r"</proposed_plan>")
_FENCE_OPEN = re.compile(r"```(?:json|JSON)?[ \t]*\n")
_FENCE_CLOSE = re.compile(r"\n?```")
_MAX_SPANS = 256
"""Candidates tried per shape: trying every pair of a reply's fences would be quadratic in
them, and a reply is a model's."""


def parse_plan(text: str) -> Plan | None:
    """The plan in ``text``, or ``None`` when it holds none.

    Accepted: the whole text a JSON object; a ```json fenced block (text around it is
    allowed: models introduce their plans); the inside of ``<proposed_plan>`` tags, itself
    bare or fenced. The first candidate that is a complete plan wins. A closing fence or
    tag inside the plan's own strings does not cut it short: each later closing one is
    tried too."""
    for candidate in _candidates(text):
        plan = _plan_from_json(candidate)
        if plan is not None:
            return plan
    return None


def _candidates(text: str) -> Iterator[str]:
    for tagged in _spans(text, _TAG_OPEN, _TAG_CLOSE):
        yield from _spans(tagged, _FENCE_OPEN, _FENCE_CLOSE)
        yield tagged
    yield from _spans(text, _FENCE_OPEN, _FENCE_CLOSE)
    yield text


def _spans(text: str, opening: re.Pattern[str], closing: re.Pattern[str]) -> Iterator[str]:
    """The text between each opening and a closing after it: first every opening with its
    nearest closing (the usual reply), then with the next one, and so on, up to
    :data:`_MAX_SPANS` in all."""
    opens = [found.end() for found in opening.finditer(text)]
    closes = [(found.start(), found.end()) for found in closing.finditer(text)]
    starts = [start for start, _ in closes]
    firsts = [bisect.bisect_left(starts, at) for at in opens]
    tried = 0
    for depth in range(len(closes)):
        found = False
        for at, first in zip(opens, firsts, strict=True):
            if first + depth >= len(closes):
                continue
            if tried == _MAX_SPANS:
                return
            found, tried = True, tried + 1
            yield text[at : closes[first + depth][0]]
        if not found:
            return


def _plan_from_json(candidate: str) -> Plan | None:
    try:
        data = json.loads(candidate)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    if not isinstance(data, dict):
        return None
    goal = _text(data.get("goal"))
    raw_steps = data.get("steps")
    if not goal or not isinstance(raw_steps, list) or not raw_steps:
        return None
    steps: list[PlanStep] = []
    for position, raw in enumerate(raw_steps, start=1):
        step = _step(raw, position)
        if step is None:
            return None
        steps.append(step)
    risks = _texts(data.get("risks"))
    prerequisites = _texts(data.get("prerequisites"))
    total = _text(data.get("estimated_total_time"))
    if risks is None or prerequisites is None or total is None:
        return None
    return Plan(
        goal=goal,
        steps=tuple(steps),
        estimated_total_time=total,
        risks=risks,
        prerequisites=prerequisites,
    )


def _step(raw: object, position: int) -> PlanStep | None:
    if isinstance(raw, str) and raw.strip():
        return PlanStep(step_number=position, action=raw.strip())
    if not isinstance(raw, dict):
        return None
    action = _text(raw.get("action"))
    reason = _text(raw.get("reason"))
    time = _text(raw.get("estimated_time"))
    tools = _texts(raw.get("tools_needed"))
    files = _texts(raw.get("files"))
    number = raw.get("step_number", position)
    if isinstance(number, str) and number.strip().isdigit():
        number = int(number)
    if not action or reason is None or time is None or tools is None or files is None:
        return None
    if isinstance(number, bool) or not isinstance(number, int):
        return None
    return PlanStep(
        step_number=number,
        action=action,
        reason=reason,
        tools_needed=tools,
        estimated_time=time,
        files=files,
    )


def _text(value: object) -> str | None:
    """A text field: a string, or a number written as one; absent is empty; else invalid."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float):
        return str(value)
    return None


def _texts(value: object) -> tuple[str, ...] | None:
    """A list-of-text field: a list of texts, or one text as a list of one; absent is empty."""
    if value is None:
        return ()
    if isinstance(value, list):
        items = [_text(item) for item in value]
        if any(item is None for item in items):
            return None
        return tuple(item for item in items if item)
    single = _text(value)
    if single is None:
        return None
    return (single,) if single else ()


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan in the JSON format agents answer in (what ``plans/plan-vN.json`` holds)."""
    return {
        "goal": plan.goal,
        "steps": [
            {
                "step_number": step.step_number,
                "action": step.action,
                "reason": step.reason,
                "tools_needed": list(step.tools_needed),
                "estimated_time": step.estimated_time,
                "files": list(step.files),
            }
            for step in plan.steps
        ],
        "estimated_total_time": plan.estimated_total_time,
        "risks": list(plan.risks),
        "prerequisites": list(plan.prerequisites),
    }


def plan_json(plan: Plan) -> str:
    """The plan as indented JSON text; :func:`parse_plan` reads it back to an equal plan."""
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False)


def render_plan(plan: Plan) -> str:
    """The plan as a person reads it: the goal, numbered steps with why, tools and time,
    then the total time, prerequisites and risks (sections that are empty are left out)."""
    lines = [f"Goal: {plan.goal}", "", "Steps:"]
    for step in plan.steps:
        lines.append(f"  {step.step_number}. {step.action}")
        details: Mapping[str, str] = {
            "Why": step.reason,
            "Tools": ", ".join(step.tools_needed),
            "Files": ", ".join(step.files),
            "Time": step.estimated_time,
        }
        lines += [f"     {name}: {value}" for name, value in details.items() if value]
    if plan.estimated_total_time:
        lines += ["", f"Estimated total time: {plan.estimated_total_time}"]
    for title, items in (("Prerequisites", plan.prerequisites), ("Risks", plan.risks)):
        if items:
            lines += ["", f"{title}:", *(f"  - {item}" for item in items)]
    return "\n".join(lines)
