"""Questions an agent puts to the user: their shape, the ``ask_user`` tool, and its text form.

A question has exactly the fields ``question``, ``context``, ``severity`` (critical, major or
minor), ``options`` (each a label, a value and a description) and ``default`` (the value
taken when nobody answers). Agents ask through the ``ask_user`` tool; a model without tool
use may reply with the same JSON object as its text, and :func:`question_in_text` reads it
as the same question. Agents that may not ask (those of a multi-agent answer round: N of them
must not flood the user) get ``record_assumption`` instead: they say what they would have
asked and what they assume, and go on.

Who answers is a :class:`QuestionGate`: a person (the REPL's card, a websocket watcher) or a
headless policy.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

import attrs
import orjson

from conclave.actors.llm.protocol import ToolSchema
from conclave.actors.tools.arguments import ArgumentError, parse_arguments

__all__ = [
    "ANSWER_PREFIXES",
    "ASK_USER",
    "ASSUMED_INSTEAD",
    "NO_DEFAULT",
    "RECORD_ASSUMPTION",
    "Assumption",
    "PendingQuestion",
    "Question",
    "QuestionGate",
    "QuestionOption",
    "Reply",
    "ReplySource",
    "Severity",
    "parse_assumption",
    "parse_question",
    "question_in_text",
    "question_json",
    "reply_text",
]


class Severity(enum.Enum):
    """How much hangs on the answer: what the user's card looks like, and whether to ask."""

    CRITICAL = "critical"
    MAJOR = "major"
    MINOR = "minor"


@attrs.frozen(kw_only=True)
class QuestionOption:
    label: str
    """What the user reads on the choice."""
    value: str
    """What the agent gets back when the user picks it."""
    description: str = ""


@attrs.frozen(kw_only=True)
class Question:
    question: str
    context: str = ""
    """Why the agent asks: what it knows and what depends on the answer."""
    severity: Severity = Severity.MAJOR
    options: tuple[QuestionOption, ...] = ()
    """The choices offered; the user may always answer in free text instead."""
    default: str = ""
    """The value taken when nobody answers (a headless run's ``--on-question default``)."""


class ReplySource(enum.Enum):
    """Who settled a question."""

    USER = "user"
    """A person answered (the REPL's card, a websocket watcher, ``conclave resume``)."""
    DEFAULT = "default"
    """Nobody was there: the question's default was taken, and recorded as an assumption."""


@attrs.frozen(kw_only=True)
class Reply:
    value: str
    source: ReplySource = ReplySource.USER


@attrs.frozen(kw_only=True)
class Assumption:
    """What an agent went on with instead of asking."""

    agent: str = ""
    """Who assumed (empty until the run records it)."""
    question: str
    """The question it would have asked."""
    assumption: str
    """What it assumed instead."""


@attrs.frozen(kw_only=True)
class PendingQuestion:
    """A question asked and not answered: the one a failed or paused run stopped on."""

    agent: str
    question_id: str
    question: Question


class QuestionGate(Protocol):
    async def ask(self, asked: PendingQuestion) -> Reply:
        """The answer to ``asked`` (its agent, its id in the run, the question). Only one
        question is put to a gate at a time, with the run's clock paused. Cancellation (the
        run ended) abandons the question."""
        ...


_OPTION = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "minLength": 1},
        "value": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
    },
    "required": ["label", "value"],
    "additionalProperties": False,
}

ASK_USER = ToolSchema(
    name="ask_user",
    description=(
        "Ask the user a question and wait for the answer. Ask only what you cannot decide "
        "well alone: say why in `context`, rate it `severity` critical (the work cannot go on "
        "well without it), major (a choice the user will care about) or minor (a preference), "
        "offer `options` when the answers are few, and give the `default` you would take."
    ),
    parameters={
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1},
            "context": {"type": "string"},
            "severity": {"type": "string", "enum": [s.value for s in Severity]},
            "options": {"type": "array", "items": _OPTION},
            "default": {"type": "string"},
        },
        "required": ["question", "severity"],
        "additionalProperties": False,
    },
    read_only=True,
)

RECORD_ASSUMPTION = ToolSchema(
    name="record_assumption",
    description=(
        "Record an assumption instead of asking the user (in this run, agents do not ask): "
        "the `question` you would have asked and the `assumption` you go on with. The user "
        "sees it with the result."
    ),
    parameters={
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1},
            "assumption": {"type": "string", "minLength": 1},
        },
        "required": ["question", "assumption"],
        "additionalProperties": False,
    },
    read_only=True,
)


def parse_question(raw: str) -> Question:
    """The question in an ``ask_user`` call's arguments; raises :class:`ArgumentError`
    naming what is wrong, for the model to correct its call."""
    return _question(parse_arguments(raw, ASK_USER.parameters, tool=ASK_USER.name))


def parse_assumption(raw: str) -> Assumption:
    args = parse_arguments(raw, RECORD_ASSUMPTION.parameters, tool=RECORD_ASSUMPTION.name)
    return Assumption(question=args["question"], assumption=args["assumption"])


def question_in_text(text: str) -> Question | None:
    """The question in a reply's text when the text is exactly an ``ask_user`` JSON object
    (a model without tool use asking), possibly inside one fenced code block; else ``None``."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```"):
        body = body[3:-3].removeprefix("json").strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        return parse_question(body)
    except ArgumentError:
        return None


def _question(args: dict[str, Any]) -> Question:
    options = tuple(
        QuestionOption(label=o["label"], value=o["value"], description=o.get("description", ""))
        for o in args.get("options", [])
    )
    default = args.get("default", "")
    values = [o.value for o in options]
    if default and options and default not in values:
        raise ArgumentError(
            f"the default of ask_user must be one of the options' values {values}; "
            f"got {default!r}: give one of them, or leave default out"
        )
    return Question(
        question=args["question"],
        context=args.get("context", ""),
        severity=Severity(args["severity"]),
        options=options,
        default=default or (values[0] if values else ""),
    )


_DEFAULT_TAKEN = "Nobody could answer now; your default was taken: "
_NO_DEFAULT_TAKEN = "Nobody could answer now, and your question has no default: "
_USER_ANSWERED = "The user answered: "
_NOT_ASKED = "Nobody is asked in this round: "
ANSWER_PREFIXES = (_USER_ANSWERED, _DEFAULT_TAKEN, _NO_DEFAULT_TAKEN, _NOT_ASKED)
"""How every :func:`reply_text` and :data:`ASSUMED_INSTEAD` begin (the scripted backend
reads an answer back by it)."""
ASSUMED_INSTEAD = (
    f"{_NOT_ASKED}several agents answer it, and they record assumptions instead of asking. "
    "Your question is recorded as an assumption the user will see. Decide yourself, taking "
    "the safest course, go on, and say in your answer what you assumed."
)
"""What an agent of a multi-agent answer round reads back for a question it could not ask
(a PAOR reflection's ``needs_user``)."""
NO_DEFAULT = "(no default: the agent decides, taking the safest course)"
"""The assumption recorded when a question without a default meets nobody to answer."""


def reply_text(reply: Reply) -> str:
    """What the agent reads back: the answer, and whether a person gave it."""
    if reply.source is ReplySource.DEFAULT and not reply.value:
        return (
            f"{_NO_DEFAULT_TAKEN}decide yourself, taking the safest course, go on, and say in "
            "your answer what the user still needs to decide."
        )
    if reply.source is ReplySource.DEFAULT:
        return (
            f"{_DEFAULT_TAKEN}{reply.value}\n"
            "Go on with it; it is recorded as an assumption the user will see."
        )
    return f"{_USER_ANSWERED}{reply.value}"


def question_json(question: Question) -> str:
    """The question as the JSON object a model writes (the prompt's example of the format)."""
    return orjson.dumps(
        {
            "question": question.question,
            "context": question.context,
            "severity": question.severity.value,
            "options": [attrs.asdict(o) for o in question.options],
            "default": question.default,
        }
    ).decode()
