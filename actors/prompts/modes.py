"""Collaboration-mode prompts: what each mode adds to an agent's system message.

``plan`` makes every answer a JSON plan (the format :mod:`actors.planning.plan` parses) and
forbids changes; what an agent may call is enforced by the tools it is offered, not by these
words alone. ``execute`` asks for autonomy: work on, record assumptions, report milestones,
finish. ``default`` adds nothing, unless the agent acts on an approved plan or may reach the
user (questions on): then it carries the Act section (:func:`act_section`): carry out the
plan, when to proceed and when to ask, the question format and its severities. The presenter
keeps the mode's format: :func:`presentation_mode_note` is added to the presentation's system
message.

Every text here is Conclave's own: nothing a task, an answer or a plan says is put into it,
so no content can pose as these rules.
"""

from __future__ import annotations

import enum

from conclave.actors.human.questions import (
    Question,
    QuestionOption,
    Severity,
    question_json,
)
from conclave.config.modes import CollaborationMode

__all__ = [
    "ACT_MARKER",
    "PLAN_MODE_MARKER",
    "Reach",
    "act_section",
    "is_plan_mode",
    "mode_prefix",
    "presentation_mode_note",
]


class Reach(enum.Enum):
    """How an acting agent may reach the user."""

    ASK = "ask"
    """``ask_user``: a single agent, or the presenter, with questions on."""
    ASSUME = "assume"
    """``record_assumption``: an agent of a multi-agent answer round (or in execute mode)."""
    NONE = "none"
    """Questions are off: nobody can be asked during the run."""


ACT_MARKER = "[ACT]"
"""Opens the Act section."""

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

_EXECUTE_ASSUME = (
    "Record each assumption with record_assumption as you make it, so the user sees it with "
    "the result. "
)

_EXAMPLE = Question(
    question="Delete the legacy importer in src/legacy/?",
    context="The plan replaces it, but scripts/migrate.sh still imports it.",
    severity=Severity.CRITICAL,
    options=(
        QuestionOption(label="Delete it", value="delete", description="and fix the script"),
        QuestionOption(label="Keep it", value="keep", description="mark it deprecated"),
    ),
    default="keep",
)

_ACT_HEAD = (
    f"{ACT_MARKER} You are acting: carry out the work, and if the task holds an approved "
    "plan, execute that plan step by step, in order. How far to go on your own: "
    "small changes — proceed (formatting, obvious fixes, typos, a missing import); "
    "medium changes — proceed and mention them in your answer (a new helper, a changed "
    "signature inside the plan's scope, an extra test); "
)

_ACT_LARGE = {
    Reach.ASK: (
        "large changes — ask the user first (deleting files, a major refactoring, deviating "
        "from the plan, real uncertainty about what the user wants). "
        "To ask, call ask_user with exactly these fields: question, context (why you ask and "
        "what depends on it), severity, options (each label, value, description), default "
        "(the value you would take). Without tool calls, reply with the same JSON object and "
        f"nothing else, e.g. {question_json(_EXAMPLE)}. "
        "Severity: critical — you cannot go on safely without the answer (data loss, "
        "something irreversible, a security risk); major — a choice the user will care about, "
        "with a sensible default; minor — a preference: prefer deciding yourself and "
        "mentioning it. Ask one question at a time, and only what you cannot decide well. "
    ),
    Reach.ASSUME: (
        "large changes (deleting files, a major refactoring, deviating from the plan, real "
        "uncertainty) — you cannot ask the user in this run: take the safest choice, record "
        "it with record_assumption (the question you would have asked, and what you assume), "
        "and say so in your answer. "
    ),
    Reach.NONE: (
        "large changes (deleting files, a major refactoring, deviating from the plan, real "
        "uncertainty) — nobody can be asked during this run: do not make them; take the "
        "safest course, and say in your answer what you would need the user to decide. "
    ),
}


def act_section(reach: Reach) -> str:
    """The Act section: execute the approved plan; the autonomy guidelines with examples;
    how to ask (the question format and severities) or, when asking is not possible, what
    to do instead. Ends with a space, ready to precede the rest of the message."""
    return _ACT_HEAD + _ACT_LARGE[reach]


_PLAN_PRESENT_NOTE = (
    f"{PLAN_MODE_MARKER} The answers are plans. The final answer is one plan, in the same "
    "JSON format inside <proposed_plan></proposed_plan> tags, with no other text. "
)


def mode_prefix(mode: CollaborationMode, *, act: Reach | None = None) -> str:
    """What the system message of an agent's round starts with in ``mode``. ``act`` (the
    agent acts on an approved plan, or questions are on) says how it may reach the user:
    default mode then carries the Act section, and execute mode asks for recorded
    assumptions when ``record_assumption`` is offered. Without it, default adds nothing.
    Non-empty prefixes end with a space, ready to precede the rest of the message."""
    if mode is CollaborationMode.PLAN:
        return _PLAN
    if mode is CollaborationMode.EXECUTE:
        return _EXECUTE + (_EXECUTE_ASSUME if act is Reach.ASSUME else "")
    return act_section(act) if act is not None else ""


def presentation_mode_note(mode: CollaborationMode, *, act: Reach | None = None) -> str:
    """What the presenter's system message starts with in ``mode``: a plan run presents (or
    merges, under ``synthesize``) one plan; an acting presenter (``act``) in default mode
    carries the Act section, as a round does; otherwise nothing."""
    if mode is CollaborationMode.PLAN:
        return _PLAN_PRESENT_NOTE
    if mode is CollaborationMode.DEFAULT and act is not None:
        return act_section(act)
    return ""


def is_plan_mode(system: str) -> bool:
    """Whether a system message was built in plan mode: it starts with the plan prefix or the
    presenter's note (the mode comes first; a configured ``system_prompt`` follows Conclave's
    rules, so words a user configured cannot switch plan mode on)."""
    return system.startswith(PLAN_MODE_MARKER)
