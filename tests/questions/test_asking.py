"""Who may ask the user, and how a question travels: a single agent and the presenter ask
through ``ask_user`` and go on with the answer; agents of a multi-agent answer round record
assumptions instead; a model without tool use may write the question as JSON text. Every run
here is a real run on the scripted backend under ``autojump_clock``."""

from __future__ import annotations

import json

from conclave.actors.agent.events import LlmRequestStarted
from conclave.actors.events.loop import ToolCallFinished
from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import Question, QuestionOption, ReplySource, Severity
from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
)
from conclave.actors.run.driver import build_backend
from conclave.actors.run.result import Termination
from conclave.config.modes import CollaborationMode
from conclave.config.schema import AgentConfig, FinalAnswerStrategy
from conclave.config.schema.backends import ToolStep
from tests.coordination.helpers import RecordingBackend, agent, config, run_tapped
from tests.questions.helpers import CRITICAL, MAJOR, MINOR, Person, asks


async def test_a_single_agent_asks_and_gets_the_users_answer_as_the_calls_result(
    autojump_clock: object,
) -> None:
    person = Person("delete")
    run = await run_tapped(config(agent("a", tool_steps=asks(CRITICAL))), questions=person)

    [(asker, question)] = person.asked
    assert asker == "a"
    assert question == Question(
        question="Delete the old migrations?",
        context="They are unused but the deploy script may read them.",
        severity=Severity.CRITICAL,
        options=(
            QuestionOption(label="Keep them", value="keep", description="safe"),
            QuestionOption(label="Delete them", value="delete"),
        ),
        default="keep",
    )
    [call] = [e for e in run.events(ToolCallFinished) if e.tool == "ask_user"]
    assert call.output == "The user answered: delete"
    assert run.result.termination is Termination.COMPLETED


async def test_asking_and_answering_are_recorded_with_one_question_id(
    autojump_clock: object,
) -> None:
    steps = asks(CRITICAL, MAJOR, MINOR)
    run = await run_tapped(config(agent("a", tool_steps=steps)), questions=Person("ok"))

    asked = run.events(QuestionAsked)
    answered = run.events(QuestionAnswered)
    assert [e.severity for e in asked] == [Severity.CRITICAL, Severity.MAJOR, Severity.MINOR]
    assert [e.question_id for e in asked] == [e.question_id for e in answered]
    assert len({e.question_id for e in asked}) == 3
    assert all(e.answer == "ok" and e.source is ReplySource.USER for e in answered)


async def test_the_run_clock_stops_while_a_question_waits(autojump_clock: object) -> None:
    person = Person("ok", seconds=600.0)
    cfg = config(agent("a", latency=1.0, tool_steps=asks(MAJOR)), run_timeout=30.0)

    run = await run_tapped(cfg, questions=person)

    assert run.result.termination is Termination.COMPLETED
    assert run.result.final_answer is not None


async def test_agents_of_a_multi_agent_round_record_assumptions_instead_of_asking(
    autojump_clock: object,
) -> None:
    assume = ToolStep(
        tool="record_assumption",
        arguments={"question": "Which license?", "assumption": "MIT"},
    )
    person = Person()
    steps = (*asks(MAJOR), assume)  # ask_user is not offered: the script leaves it out
    cfg = config(agent("a", seed=1, tool_steps=steps), agent("b", seed=2, tool_steps=steps))

    run = await run_tapped(cfg, questions=person)

    assert person.asked == []
    recorded = run.events(AssumptionRecorded)
    assert sorted(e.agent for e in recorded) == ["a", "b"]
    assert {(e.question, e.assumption) for e in recorded} == {("Which license?", "MIT")}


async def test_the_presenter_of_a_multi_agent_run_may_ask(autojump_clock: object) -> None:
    person = Person("yes")
    members = [
        agent(name, seed=i, vote="agent1", presentation_tool_steps=asks(MINOR))
        for i, name in enumerate(["a", "b"], start=1)
    ]
    cfg = config(*members, final_answer_strategy=FinalAnswerStrategy.WINNER_PRESENT)

    await run_tapped(cfg, questions=person)

    assert [(who, q.question) for who, q in person.asked] == [("a", "Tabs or spaces?")]


async def test_with_questions_off_no_agent_is_offered_a_way_to_ask(
    autojump_clock: object,
) -> None:
    requests: list[CompletionRequest] = []

    def recording(member: AgentConfig) -> LLMBackend:
        backend = RecordingBackend(build_backend(member))
        backend.requests = requests
        return backend

    await run_tapped(config(agent("a", tool_steps=asks(MAJOR))), backend_factory=recording)

    offered = {t.name for r in requests for t in r.tools}
    assert not offered & {"ask_user", "record_assumption"}


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
            text = f"```json\n{json.dumps(MAJOR)}\n```"
            return Completion(message=ChatMessage(role="assistant", content=text))
        return await self.inner.complete(request)


async def test_a_question_written_as_json_text_is_asked_and_answered_in_the_next_message(
    autojump_clock: object,
) -> None:
    person = Person("Apache-2.0")
    backends: list[AsksInText] = []

    def factory(member: AgentConfig) -> LLMBackend:
        backends.append(AsksInText(build_backend(member)))
        return backends[-1]

    run = await run_tapped(config(agent("a")), questions=person, backend_factory=factory)

    assert [q.question for _, q in person.asked] == ["Which license?"]
    second = backends[0].requests[1].messages
    assert second[-1] == ChatMessage(role="user", content="The user answered: Apache-2.0")
    assert run.result.termination is Termination.COMPLETED
    assert len(run.events(LlmRequestStarted)) >= 2


async def test_execute_mode_never_asks_the_user(autojump_clock: object) -> None:
    person = Person()
    cfg = config(agent("a", tool_steps=asks(CRITICAL)))

    run = await run_tapped(cfg, questions=person, mode=CollaborationMode.EXECUTE)

    assert person.asked == []
    assert run.result.termination is Termination.COMPLETED
