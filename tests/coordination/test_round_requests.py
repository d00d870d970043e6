"""What a coordination round asks of the model: a tool call, always, and the answers in the
order they were given (a new one last, after what a provider may have cached)."""

from __future__ import annotations

from conclave.actors.llm.protocol import CallPurpose, ToolChoice
from conclave.actors.prompts.coordination import parse_prompt
from tests.coordination.helpers import Recorder, agent, agents, config, run_tapped


async def test_every_round_request_requires_a_tool_call_and_the_presentation_does_not(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    await run_tapped(config(*agents(3, latency=0.2)), backend_factory=recorder)

    requests = [r for b in recorder.backends.values() for r in b.requests]
    rounds = [r for r in requests if r.purpose is CallPurpose.ROUND]
    presentations = [r for r in requests if r.purpose is CallPurpose.PRESENT]
    assert rounds and presentations
    assert {r.tool_choice for r in rounds} == {ToolChoice.REQUIRED}
    assert {r.tool_choice for r in presentations} == {ToolChoice.AUTO}


async def test_a_round_shows_the_answers_in_the_order_they_were_given(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    run = await run_tapped(
        config(
            agent("a1", seed=1, latency=0.3),
            agent("a2", seed=2, latency=0.1),
            agent("a3", seed=3, latency=0.2),
        ),
        backend_factory=recorder,
    )

    given = [a.label for a in run.result.answers]
    assert given == ["agent2.1", "agent3.1", "agent1.1"]  # not the labels' order
    rounds = [r for r in recorder.backends["a1"].requests if r.purpose is CallPurpose.ROUND]
    body = parse_prompt(rounds[-1].messages)
    assert list(body.answers) == given
