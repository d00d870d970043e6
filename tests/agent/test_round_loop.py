"""An agent's round is one run_loop over a transcript: what a rejected submission, a fatal
backend error and a context overflow do to it, and how the presentation runs."""

from __future__ import annotations

from conclave.actors.agent.events import AgentStatusChanged, RoundStarted
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.protocol import AnswerVerdict, AnswerView, Present, Presentation
from conclave.actors.llm.errors import ContextOverflow, FatalLLMError
from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from conclave.config.schema import FinalAnswerStrategy
from tests.agent.harness import (
    AGENT,
    TASK,
    AgentRun,
    FakeBackend,
    answer,
    open_agent,
)

NO_CALL = ChatMessage(role="assistant", content="I would say: hold paper.")
LONG = AnswerView(label="agent2.1", content="x" * 400)


async def _settled(run: AgentRun, status: str) -> AgentStatusChanged:
    event: AgentStatusChanged = await run.tap.wait_for(
        AgentStatusChanged, lambda e: e.status == status
    )
    return event


async def test_a_rejected_answer_gets_its_error_as_the_calls_result_and_the_loop_goes_on(
    autojump_clock: object,
) -> None:
    backend = FakeBackend([answer("first", "c1"), answer("second", "c2")])
    async with open_agent(backend) as run:
        run.desk.verdicts.append(AnswerVerdict(accepted=False, error="That answer is a duplicate."))
        run.start()
        await _settled(run, "answered")

    first, second = backend.requests
    assert second.messages == (
        *first.messages,
        answer("first", "c1"),
        ChatMessage(role="tool", content="Error: That answer is a duplicate.", tool_call_id="c1"),
    )
    assert [getattr(s, "content", None) for s in run.desk.submissions] == ["first", "second"]
    assert len(run.tap.of_type(RoundStarted)) == 1


async def test_violations_and_rejections_count_against_the_same_three_tries(
    autojump_clock: object,
) -> None:
    backend = FakeBackend([NO_CALL, answer("rejected"), NO_CALL])
    async with open_agent(backend) as run:
        run.desk.verdicts.append(AnswerVerdict(accepted=False, error="nope"))
        run.start()
        excluded = await _settled(run, "excluded")

    assert len(backend.requests) == 3
    assert excluded.detail.startswith(
        "3 tries failed; last error: You must end this turn with exactly one workflow tool call"
    )
    [failed] = run.desk.failed
    assert failed.reason == excluded.detail


async def test_a_rejection_that_uses_the_last_try_excludes_the_agent_with_its_error(
    autojump_clock: object,
) -> None:
    backend = FakeBackend([NO_CALL, NO_CALL, answer("rejected")])
    async with open_agent(backend) as run:
        run.desk.verdicts.append(AnswerVerdict(accepted=False, error="nope"))
        run.start()
        excluded = await _settled(run, "excluded")

    assert len(backend.requests) == 3
    assert excluded.detail == "3 tries failed; last error: nope"


async def test_a_fatal_backend_error_excludes_the_agent_at_once(autojump_clock: object) -> None:
    error = "openai at api.example.com refused the API key (401); check OPENAI_API_KEY"
    backend = FakeBackend([FatalLLMError(error)])
    async with open_agent(backend) as run:
        run.start()
        excluded = await _settled(run, "excluded")

    assert len(backend.requests) == 1
    assert excluded.detail == error
    assert [f.reason for f in run.desk.failed] == [error]


async def test_a_context_overflow_is_tried_again_once_with_shorter_answer_previews(
    autojump_clock: object,
) -> None:
    backend = FakeBackend([ContextOverflow("the prompt is too long"), answer()])
    async with open_agent(backend) as run:
        run.update(LONG)
        run.start()
        await _settled(run, "answered")

    first, second = ("".join(m.content for m in r.messages) for r in backend.requests)
    assert "x" * 400 in first
    assert "x" * 100 + " …" in second
    assert "x" * 101 not in second


async def test_a_second_context_overflow_is_a_failed_try(autojump_clock: object) -> None:
    backend = FakeBackend([ContextOverflow("the prompt is too long")] * 4)
    async with open_agent(backend) as run:
        run.update(LONG)
        run.start()
        excluded = await _settled(run, "excluded")

    assert len(backend.requests) == 4  # one shortened retry, then three failed tries
    assert excluded.detail == "3 tries failed; last error: the prompt is too long"


def _present(
    answers: tuple[AnswerView, ...] = (AnswerView(label="agent1.1", content="A."),),
) -> Present:
    return Present(
        strategy=FinalAnswerStrategy.WINNER_PRESENT,
        task=TASK,
        own_label="agent1.1",
        answers=answers,
    )


async def test_round_calls_are_made_for_a_round_and_the_presentation_for_presenting(
    autojump_clock: object,
) -> None:
    final = ChatMessage(role="assistant", content="The final answer.")
    backend = FakeBackend([answer(), final])
    async with open_agent(backend) as run:
        run.start()
        await _settled(run, "answered")
        reply = await run.system.ask(agent_address(AGENT), _present())

    assert reply == Presentation(content="The final answer.")
    assert [r.purpose for r in backend.requests] == [CallPurpose.ROUND, CallPurpose.PRESENT]
    assert backend.requests[1].tools == ()


async def test_an_empty_presentation_gets_the_error_back_and_is_written_again(
    autojump_clock: object,
) -> None:
    empty = ChatMessage(role="assistant", content="  ")
    backend = FakeBackend([empty, ChatMessage(role="assistant", content="The final answer.")])
    async with open_agent(backend) as run:
        reply = await run.system.ask(agent_address(AGENT), _present())

    assert reply == Presentation(content="The final answer.")
    first, second = backend.requests
    assert second.messages[len(first.messages) :] == (
        empty,
        ChatMessage(
            role="user", content="Error: The reply was empty; reply with the text asked for."
        ),
    )


async def test_a_presentation_that_overflows_is_written_again_with_shorter_answers(
    autojump_clock: object,
) -> None:
    final = ChatMessage(role="assistant", content="The final answer.")
    backend = FakeBackend([ContextOverflow("too long"), final])
    async with open_agent(backend) as run:
        reply = await run.system.ask(
            agent_address(AGENT), _present((AnswerView(label="agent1.1", content="y" * 400),))
        )

    assert reply == Presentation(content="The final answer.")
    assert "y" * 100 + " …" in backend.requests[1].messages[-1].content
    assert "y" * 101 not in backend.requests[1].messages[-1].content


async def test_a_presentation_whose_tries_fail_says_why(autojump_clock: object) -> None:
    backend = FakeBackend([FatalLLMError("the model gpt-9 does not exist")])
    async with open_agent(backend) as run:
        reply = await run.system.ask(agent_address(AGENT), _present())

    assert reply == Presentation(content=None, error="the model gpt-9 does not exist")
