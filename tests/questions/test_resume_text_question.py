"""A question a model wrote as JSON text (no ``ask_user`` call) is in the transcript already
when the run pauses: its resume point ends with that reply once, then the answer as the next
user message, the messages a direct answer gives the model's next call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conclave.actors.agent.resume import resume_point
from conclave.actors.human.unanswered import NobodyAnswers, OnQuestion
from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
)
from conclave.actors.run.driver import build_backend
from conclave.actors.run.result import Termination
from conclave.config.schema import AgentConfig
from tests.coordination.helpers import agent, config, run_tapped
from tests.questions.helpers import MAJOR, Person

_TEXT = f"```json\n{json.dumps(MAJOR)}\n```"


class AsksInText:
    """A model without tool use: its first reply is the question as JSON text."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner
        self.requests: list[CompletionRequest] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        if len(self.requests) == 1:
            return Completion(message=ChatMessage(role="assistant", content=_TEXT))
        return await self.inner.complete(request)


def _factory(backends: list[AsksInText]) -> Callable[[AgentConfig], LLMBackend]:
    def make(member: AgentConfig) -> LLMBackend:
        backends.append(AsksInText(build_backend(member)))
        return backends[-1]

    return make


async def test_a_question_asked_in_text_resumes_with_the_messages_a_direct_answer_gives(
    tmp_path: Path, autojump_clock: object
) -> None:
    paused = await run_tapped(
        config(agent("a")),
        questions=NobodyAnswers(OnQuestion.PAUSE),
        backend_factory=_factory([]),
        log_dir=tmp_path / "paused",
    )
    direct: list[AsksInText] = []
    await run_tapped(config(agent("a")), questions=Person("MIT"), backend_factory=_factory(direct))

    point = resume_point(tmp_path / "paused", "MIT")

    assert paused.result.termination is Termination.PAUSED
    said = [(m.role, m.content) for m in point.messages]
    assert said == [(m.role, m.content) for m in direct[0].requests[1].messages]
    assert said.count(("assistant", _TEXT)) == 1
    assert said[-1] == ("user", "The user answered: MIT")
