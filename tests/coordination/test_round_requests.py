"""What a coordination round asks of the model: a tool call, always, and only the tools it
offers."""

from __future__ import annotations

from conclave.actors.llm.protocol import CallPurpose, ToolChoice
from tests.coordination.helpers import Recorder, agents, config, run_tapped


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
