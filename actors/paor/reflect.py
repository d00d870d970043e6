"""Reflect: the model judges the iteration through the ``reflect`` tool."""

from __future__ import annotations

import json

import attrs

from conclave.actors.llm.protocol import ToolSchema

__all__ = ["REFLECT", "BadReflection", "Reflection", "parse_reflection"]


@attrs.frozen(kw_only=True)
class Reflection:
    goal_achieved: bool
    progress: str
    """What is done so far (the final summary when the goal is achieved)."""
    next: str = ""
    """What is left, for the next plan."""
    stuck: bool = False
    needs_user: str = ""
    """A question for the user; empty when none is needed."""


class BadReflection(ValueError):
    """What was wrong with a ``reflect`` call, said to the model."""


REFLECT = ToolSchema(
    name="reflect",
    description=(
        "Judge the iteration from its observations: whether the goal is achieved, the "
        "progress so far, what to do next, whether you are stuck, and a question for the "
        "user if (and only if) you cannot go on without one."
    ),
    parameters={
        "type": "object",
        "properties": {
            "goal_achieved": {"type": "boolean"},
            "progress": {"type": "string"},
            "next": {"type": "string"},
            "stuck": {"type": "boolean"},
            "needs_user": {"type": "string"},
        },
        "required": ["goal_achieved", "progress"],
    },
    read_only=True,
)


def parse_reflection(arguments: str) -> Reflection:
    """The reflection in a ``reflect`` call's arguments; raises :class:`BadReflection`."""
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise BadReflection(f"reflect's arguments are not JSON ({exc}); send an object") from None
    if not isinstance(data, dict):
        raise BadReflection("reflect's arguments must be an object")
    achieved, progress = data.get("goal_achieved"), data.get("progress")
    nxt, stuck, needs = data.get("next", ""), data.get("stuck", False), data.get("needs_user", "")
    if not isinstance(achieved, bool) or not isinstance(stuck, bool):
        raise BadReflection("reflect: goal_achieved and stuck must be true or false")
    if not isinstance(progress, str) or not progress.strip():
        raise BadReflection("reflect needs progress: what is done so far, a non-empty string")
    if not isinstance(nxt, str) or not isinstance(needs, str):
        raise BadReflection("reflect: next and needs_user must be strings")
    return Reflection(
        goal_achieved=achieved, progress=progress, next=nxt, stuck=stuck, needs_user=needs
    )
