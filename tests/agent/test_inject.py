"""The ``inject`` in-flight policy: answers that arrive while a round with tools is working go
in as ONE user message at the next step boundary, with no restart and no work discarded. It
is what rounds with tools do; rounds without tools keep ``finish`` (or ``cancel``)."""

from __future__ import annotations

import trio

from conclave.actors.agent.events import AgentStatusChanged, AnswersInjected, RoundRestarted
from conclave.actors.agent.policy import round_policy
from conclave.actors.coordination.protocol import AnswerVerdict, AnswerView, SubmitVote
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.prompts.coordination import parse_prompt, update_message
from conclave.config.schema import InFlightPolicy
from tests.agent.harness import FakeBackend, SlowTools, answer, call, open_agent, vote

B1 = AnswerView(label="agent2.1", content="Reset a router through its pinhole.")
B2 = AnswerView(label="agent2.2", content="Reset a router, then re-seat the SIM tray.")
OWN = AnswerView(label="agent1.1", content="Hold paper; pick a lock; reset a router.")


def test_rounds_with_tools_inject_unless_cancel_is_configured() -> None:
    assert round_policy(InFlightPolicy.FINISH, has_tools=True) is InFlightPolicy.INJECT
    assert round_policy(InFlightPolicy.INJECT, has_tools=True) is InFlightPolicy.INJECT
    assert round_policy(InFlightPolicy.CANCEL, has_tools=True) is InFlightPolicy.CANCEL


def test_rounds_without_tools_have_no_step_boundary_and_finish_instead_of_injecting() -> None:
    assert round_policy(InFlightPolicy.INJECT, has_tools=False) is InFlightPolicy.FINISH
    assert round_policy(InFlightPolicy.FINISH, has_tools=False) is InFlightPolicy.FINISH
    assert round_policy(InFlightPolicy.CANCEL, has_tools=False) is InFlightPolicy.CANCEL


async def test_answers_arriving_during_a_tool_call_enter_at_the_next_step_boundary(
    autojump_clock: object,
) -> None:
    # The reply at 1.0 calls a tool that reads until 3.0; B1 arrives at 2.0.
    backend = FakeBackend([call("read", "r1", path="a.txt"), answer()])
    async with open_agent(backend, tools=SlowTools(seconds=2.0)) as run:
        run.start()
        await trio.sleep(2.0)
        run.update(B1)
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    first, second = backend.requests
    assert [m.role for m in second.messages[len(first.messages) :]] == ["assistant", "tool", "user"]
    assert second.messages[-1] == update_message([B1])
    assert parse_prompt(second.messages).answers == {B1.label: B1.content}
    [injected] = run.tap.of_type(AnswersInjected)
    assert (injected.labels, injected.at) == ((B1.label,), 3.0)
    assert run.tap.of_type(RoundRestarted) == []
    assert len(run.desk.submissions) == 1


async def test_a_burst_of_updates_during_a_step_goes_in_as_one_message(
    autojump_clock: object,
) -> None:
    c1 = AnswerView(label="agent3.1", content="Bend it into a hook.")
    backend = FakeBackend([call("read", "r1", path="a.txt"), answer()])
    async with open_agent(backend, tools=SlowTools(seconds=2.0)) as run:
        run.start()
        await trio.sleep(1.5)
        run.update(B1)
        await trio.sleep(1.0)
        run.update(c1)
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    first, second = backend.requests
    added = second.messages[len(first.messages) :]
    assert [m.role for m in added] == ["assistant", "tool", "user"]
    assert added[-1] == update_message([B1, c1])


async def test_a_stale_vote_sees_the_newer_answers_and_votes_again_without_a_restart(
    autojump_clock: object,
) -> None:
    backend = FakeBackend([answer(), vote("agent2", "v1"), vote("agent2", "v2")])
    async with open_agent(backend, tools=SlowTools()) as run:
        run.start()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")
        run.desk.answers = [OWN, B1]
        run.voting_open()
        await trio.sleep(0.5)  # the vote's call is in flight; B2 is accepted meanwhile
        run.desk.answers = [OWN, B2]
        run.desk.visible = 3
        stale = AnswerVerdict(accepted=False, error="Newer answers exist.", stale=True)
        run.desk.verdicts.append(stale)
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "voted")

    _, vote_call, again = backend.requests
    added = again.messages[len(vote_call.messages) :]
    assert added == (
        vote("agent2", "v1"),
        ChatMessage(
            role="tool",
            content="Error: Newer answers exist; they follow. Look at them, then vote again "
            "or answer.",
            tool_call_id="v1",
        ),
        update_message([B2]),
    )
    first_vote, second_vote = run.desk.submissions[1:]
    assert isinstance(first_vote, SubmitVote) and isinstance(second_vote, SubmitVote)
    assert (first_vote.seen, second_vote.seen) == (2, 3)
    assert first_vote.round == second_vote.round
    assert run.tap.of_type(RoundRestarted) == []
