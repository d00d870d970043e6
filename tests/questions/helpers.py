"""Gates and scripted askers for the question specs."""

from __future__ import annotations

from typing import Any

import trio

from conclave.actors.human.questions import PendingQuestion, Question, Reply, ReplySource
from conclave.config.schema.backends import ToolStep

CRITICAL = {
    "question": "Delete the old migrations?",
    "context": "They are unused but the deploy script may read them.",
    "severity": "critical",
    "options": [
        {"label": "Keep them", "value": "keep", "description": "safe"},
        {"label": "Delete them", "value": "delete"},
    ],
    "default": "keep",
}
MAJOR = {"question": "Which license?", "severity": "major", "default": "MIT"}
MINOR = {"question": "Tabs or spaces?", "severity": "minor", "default": "spaces"}


def asks(*questions: dict[str, Any]) -> tuple[ToolStep, ...]:
    """Scripted tool steps that ask ``questions`` in order."""
    return tuple(ToolStep(tool="ask_user", arguments=q) for q in questions)


class Person:
    """Answers every question with ``value`` after ``seconds``; keeps what it was asked and
    how many questions it was shown at once."""

    def __init__(self, value: str = "yes", seconds: float = 0.0) -> None:
        self.value = value
        self.seconds = seconds
        self.asked: list[tuple[str, Question]] = []
        self.showing = 0
        self.most_at_once = 0

    async def ask(self, asked: PendingQuestion) -> Reply:
        self.asked.append((asked.agent, asked.question))
        self.showing += 1
        self.most_at_once = max(self.most_at_once, self.showing)
        try:
            await trio.sleep(self.seconds)
        finally:
            self.showing -= 1
        return Reply(value=self.value, source=ReplySource.USER)
