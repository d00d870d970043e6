"""Collaboration-mode prompts: what each mode adds to an agent's system message.

``plan`` makes every answer a JSON plan (the format :mod:`actors.planning.plan` parses) and
forbids changes; what an agent may call is enforced by the tools it is offered, not by these
words alone. ``execute`` asks for autonomy. ``default`` adds nothing. The presenter keeps the
mode's format: :func:`presentation_mode_note` is added to the presentation's system message.
"""

from __future__ import annotations

from conclave.config.modes import CollaborationMode

__all__ = ["PLAN_MODE_MARKER", "is_plan_mode", "mode_prefix", "presentation_mode_note"]

PLAN_MODE_MARKER = "[PLAN MODE]"
"""Opens the plan-mode texts; how a prompt's reader (the scripted backend) tells plan mode."""

_PLAN_FORMAT = (
    "{"
    '"goal": "what the plan achieves", '
    '"steps": [{"step_number": 1, "action": "what to do", "reason": "why", '
    '"tools_needed": ["tool names"], "estimated_time": "e.g. 10 min", '
    '"files": ["paths the step creates or changes"]}], '
    '"estimated_total_time": "e.g. 1 h", '
    '"risks": ["what could go wrong"], '
    '"prerequisites": ["what must be true first"]'
    "}"
)

_PLAN = (
    f"{PLAN_MODE_MARKER} You are planning, not doing. Investigate as much as you need with "
    "read-only means (reading files, listing, searching), but change nothing: no edits, no "
    "new files, no commands with effects. Your answer is a plan, and only a plan: one JSON "
    f"object in this format: {_PLAN_FORMAT}. 'goal' and 'steps' are required; each step "
    "needs an 'action'. Put the JSON inside <proposed_plan></proposed_plan> tags, with no "
    "other text. "
)

_EXECUTE = (
    "[EXECUTE MODE] Work autonomously: do not ask the user questions and do not wait for "
    "confirmation. Where something is unclear, make a reasonable assumption, record it in "
    "your answer, and go on. Report each milestone as you reach it, and finish the task "
    "completely before you answer. "
)

_PRESENT_PLAN = (
    f"{PLAN_MODE_MARKER} The answers are plans. The final answer is one plan, in the same "
    "JSON format inside <proposed_plan></proposed_plan> tags, with no other text. "
)


def mode_prefix(mode: CollaborationMode) -> str:
    """What the system message of an agent's round starts with in ``mode`` ("" for default).
    Non-empty prefixes end with a space, ready to precede the rest of the message."""
    return {
        CollaborationMode.DEFAULT: "",
        CollaborationMode.PLAN: _PLAN,
        CollaborationMode.EXECUTE: _EXECUTE,
    }[mode]


def presentation_mode_note(mode: CollaborationMode) -> str:
    """What the presenter's system message starts with in ``mode``: a plan run presents (or
    merges, under ``synthesize``) one plan; execute and default change nothing there."""
    return _PRESENT_PLAN if mode is CollaborationMode.PLAN else ""


def is_plan_mode(system: str) -> bool:
    """Whether a system message was built in plan mode: it starts with the plan prefix or the
    presenter's note (the mode comes first; a configured ``system_prompt`` follows Conclave's
    rules, so words a user configured cannot switch plan mode on)."""
    return system.startswith(PLAN_MODE_MARKER)
