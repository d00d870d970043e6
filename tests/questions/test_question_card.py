"""The REPL's question card, driven by keys through a pipe: the default is preselected, the
options are choices, "Other…" takes free text, Esc takes the default; its style says the
severity."""

from __future__ import annotations

import asyncio
import json

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conclave.actors.human.questions import Question, Reply, Severity, parse_question
from conclave.ui.repl.question_card import (
    OTHER,
    SEVERITY_STYLE,
    QuestionCard,
    ask_question,
    card_choices,
)
from tests.questions.helpers import CRITICAL, MAJOR, MINOR

DOWN = "\x1b[B"
UP = "\x1b[A"
ENTER = "\r"
ESC = "\x1b"
QUESTION = parse_question(json.dumps(CRITICAL))  # options keep, delete; default keep


def answer(keys: str, question: Question = QUESTION) -> Reply:
    async def main() -> Reply:
        with create_pipe_input() as pipe:
            pipe.send_text(keys)
            return await ask_question("a1", question, input=pipe, output=DummyOutput())

    return asyncio.run(main())


def test_enter_takes_the_preselected_default() -> None:
    assert answer(ENTER) == Reply(value="keep")


def test_the_default_is_preselected_wherever_it_is_among_the_options() -> None:
    question = parse_question(json.dumps({**CRITICAL, "default": "delete"}))

    assert answer(ENTER, question) == Reply(value="delete")


def test_an_option_is_chosen_by_moving_to_it() -> None:
    assert answer(DOWN + ENTER) == Reply(value="delete")


def test_an_option_is_chosen_by_its_number() -> None:
    assert answer("2") == Reply(value="delete")


def test_other_takes_a_free_answer() -> None:
    assert answer("3" + "archive them first" + ENTER) == Reply(value="archive them first")


def test_an_empty_free_answer_is_refused_and_esc_goes_back_to_the_choices() -> None:
    # Esc then Up: an escape sequence after Esc makes it read alone (not as Alt+key).
    assert answer("3" + ENTER + ESC + UP + UP + ENTER) == Reply(value="keep")


def test_with_the_field_open_the_hint_no_longer_says_esc_takes_the_default() -> None:
    card = QuestionCard("a1", QUESTION)
    assert "Esc takes the default" in card._notice()

    card.choose(2)  # Other…: the field's own prompt says Esc goes back

    assert card.field_open
    assert "Esc takes the default" not in card._notice()


def test_esc_takes_the_default() -> None:
    assert answer(ESC + ESC) == Reply(value="keep")


def test_without_options_the_default_is_a_choice_and_other_follows() -> None:
    question = parse_question(json.dumps(MAJOR))

    assert [c.label for c in card_choices(question)] == ["MIT", OTHER]
    assert answer(ENTER, question) == Reply(value="MIT")


def test_a_default_without_options_is_marked_once() -> None:
    card = QuestionCard("a1", parse_question(json.dumps(MINOR)))

    rows = "".join(text for _, text, *_ in card._choice_fragments())
    assert "1. spaces (default)" in rows
    assert rows.count("default") == 1


def test_options_show_their_descriptions_and_mark_the_default() -> None:
    card = QuestionCard("a1", QUESTION)

    rows = "".join(text for _, text, *_ in card._choice_fragments())
    assert "1. Keep them (default) — safe" in rows
    assert "3. Other…" in rows


def test_the_card_is_styled_by_severity_critical_red_major_yellow_minor_subdued() -> None:
    styles = {
        severity: QuestionCard("a1", parse_question(json.dumps(q))).container.container
        for severity, q in (
            (Severity.CRITICAL, CRITICAL),
            (Severity.MAJOR, MAJOR),
            (Severity.MINOR, MINOR),
        )
    }
    assert "bg:ansired" in SEVERITY_STYLE[Severity.CRITICAL]
    assert "ansiyellow" in SEVERITY_STYLE[Severity.MAJOR]
    assert "ansibrightblack" in SEVERITY_STYLE[Severity.MINOR]
    for severity, frame in styles.items():
        assert SEVERITY_STYLE[severity] in str(frame.style)


def test_the_title_names_the_severity_and_the_agent() -> None:
    assert QuestionCard("a1", QUESTION).title == "CRITICAL question from a1"
