"""The question card: an agent's question to the person, styled by its severity.

A critical question is prominent (white on red), a major one yellow, a minor one subdued.
The card shows who asks, the question and its context, then the options as choices (each
with its description) with the question's default preselected, and "Other…" last, which
opens a text field for a free answer. Keys: Up/Down (or k/j) and Enter, or 1-9 directly;
Esc takes the preselected default (the agent waits for an answer). A click chooses too.

A container, not an application: the REPL shows it in place of the input
(:mod:`ui.repl.questions`); :func:`ask_question` runs it as an application of its own
(tests, and any terminal without the REPL).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.layout import Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.output import Output

from conclave.actors.human.questions import Question, Reply, Severity
from conclave.ui.repl.choices import ChoiceCard, run_alone

__all__ = ["OTHER", "SEVERITY_STYLE", "Choice", "QuestionCard", "ask_question", "card_choices"]

OTHER = "Other…"
"""The last choice: answer in free text."""

SEVERITY_STYLE = {
    Severity.CRITICAL: "bold fg:ansiwhite bg:ansired",
    Severity.MAJOR: "bold fg:ansiyellow",
    Severity.MINOR: "fg:ansibrightblack",
}
"""The card's frame and title by severity: critical prominent red, major yellow, minor
subdued."""

_HINT = "Up/Down + Enter, a number or a click to choose; Esc takes the default"
_FIELD_PROMPT = "Your answer (Enter sends it, Esc goes back): "
_EMPTY = "The answer cannot be empty; type it, or press Esc to go back to the choices."
_DETAILS_HEIGHT = Dimension(min=1, max=12)


@attrs.frozen(kw_only=True)
class Choice:
    label: str
    value: str | None
    """What the agent gets; ``None`` for "Other…" (the person types it)."""
    description: str = ""


def card_choices(question: Question) -> tuple[Choice, ...]:
    """The options, or the default alone when there are none, then "Other…"."""
    choices = [
        Choice(label=o.label, value=o.value, description=o.description) for o in question.options
    ]
    if not choices and question.default:
        # Marked "(default)" by the card like any preselected default; no description.
        choices.append(Choice(label=question.default, value=question.default))
    return (*choices, Choice(label=OTHER, value=None))


class QuestionCard(ChoiceCard):
    """The card's state and layout; answering calls the ``on_answered`` callbacks once."""

    def __init__(self, agent: str, question: Question) -> None:
        self.agent = agent
        self.question = question
        self.choices = card_choices(question)
        values = [c.value for c in self.choices]
        self.default = values.index(question.default) if question.default in values else 0
        self.reply: Reply | None = None
        self.on_answered: list[Callable[[Reply], None]] = []
        details = Window(
            FormattedTextControl(self._details),
            wrap_lines=True,
            height=_DETAILS_HEIGHT,
            dont_extend_height=True,
        )
        super().__init__(
            details=details,
            title=self.title,
            hint=_HINT,
            field_prompt=_FIELD_PROMPT,
            style=SEVERITY_STYLE[question.severity],
            selected=self.default,
        )

    @property
    def title(self) -> str:
        return f"{self.question.severity.value.upper()} question from {self.agent}"

    def choose(self, index: int) -> None:
        """Take choice ``index``: an option answers; "Other…" opens the text field."""
        self.selected = index
        self.notice = ""
        value = self.choices[index].value
        if value is not None:
            self._answer(value)
            return
        self.open_field()

    def take_default(self) -> None:
        """Answer with the preselected default (Esc); with no default, open the field."""
        self.choose(self.default)

    def _answer(self, value: str) -> None:
        if self.reply is not None:
            return
        self.reply = Reply(value=value)
        for callback in self.on_answered:
            callback(self.reply)

    def _accept_field(self, buffer: object) -> bool:
        text = self.field.text.strip()
        if not text:
            self.notice = _EMPTY
            return True
        self._answer(text)
        return True

    def _details(self) -> StyleAndTextTuples:
        question = self.question
        fragments: StyleAndTextTuples = [("bold", question.question + "\n")]
        if question.context:
            fragments.append(("", question.context + "\n"))
        return fragments

    def _labels(self) -> Sequence[str]:
        labels = []
        for index, choice in enumerate(self.choices):
            default = " (default)" if index == self.default and choice.value is not None else ""
            about = f" — {choice.description}" if choice.description else ""
            labels.append(f"{choice.label}{default}{about}")
        return labels

    def _take(self, index: int) -> None:
        self.choose(index)

    def _escape(self) -> None:
        self.take_default()


async def ask_question(
    agent: str, question: Question, *, input: Input | None = None, output: Output | None = None
) -> Reply:
    """Show the card as an application of its own and return the person's answer."""
    card = QuestionCard(agent, question)
    return await run_alone(card, card.on_answered, input=input, output=output)
