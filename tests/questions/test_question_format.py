"""The question's format: exactly the fields question, context, severity, options and
default, checked with errors the model can act on; the same JSON written as text is a
question too."""

from __future__ import annotations

import json

import pytest

from conclave.actors.human.questions import (
    ASK_USER,
    Question,
    QuestionOption,
    Severity,
    parse_question,
    question_in_text,
    question_json,
)
from conclave.actors.tools.arguments import ArgumentError
from tests.questions.helpers import CRITICAL, MAJOR


def test_the_tool_takes_exactly_the_five_fields() -> None:
    assert set(ASK_USER.parameters["properties"]) == {
        "question",
        "context",
        "severity",
        "options",
        "default",
    }
    assert ASK_USER.parameters["additionalProperties"] is False


def test_severity_is_one_of_critical_major_minor() -> None:
    with pytest.raises(ArgumentError, match="severity"):
        parse_question(json.dumps({**MAJOR, "severity": "urgent"}))


def test_a_field_outside_the_format_is_refused() -> None:
    with pytest.raises(ArgumentError, match="urgency"):
        parse_question(json.dumps({**MAJOR, "urgency": "high"}))


def test_a_default_outside_the_options_is_refused_naming_them() -> None:
    with pytest.raises(ArgumentError, match=r"one of the options' values \['keep', 'delete'\]"):
        parse_question(json.dumps({**CRITICAL, "default": "archive"}))


def test_without_a_default_the_first_option_is_the_default() -> None:
    question = parse_question(json.dumps({k: v for k, v in CRITICAL.items() if k != "default"}))

    assert question.default == "keep"


def test_the_json_text_of_a_question_is_that_question() -> None:
    question = Question(
        question="Which?",
        context="why",
        severity=Severity.MINOR,
        options=(QuestionOption(label="A", value="a", description="first"),),
        default="a",
    )

    assert question_in_text(question_json(question)) == question


def test_a_question_in_a_fenced_json_block_is_found() -> None:
    text = f"```json\n{json.dumps(MAJOR)}\n```"

    assert question_in_text(text) == parse_question(json.dumps(MAJOR))


@pytest.mark.parametrize(
    "text",
    ["Here is my answer.", '{"answer": 42}', f"I ask: {json.dumps(MAJOR)}", "{not json}"],
)
def test_other_text_is_no_question(text: str) -> None:
    assert question_in_text(text) is None
