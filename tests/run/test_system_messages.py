"""What reaches the model in every call of a run: the collaboration mode's prefix (in the
system message) and each agent's own ``system_prompt`` (in a round, in the agent's own
last message, after the part every agent shares; in the presentation, in the system
message)."""

from __future__ import annotations

import attrs

from conclave.actors.llm.protocol import CallPurpose
from conclave.actors.prompts.modes import mode_prefix
from conclave.config.modes import CollaborationMode
from tests.coordination.helpers import Recorder, agent, config, run_tapped


def _said(recorder: Recorder, member: str) -> list[str]:
    """Everything each request of ``member`` said, one text per request."""
    return [
        "\n".join(m.content for m in request.messages)
        for request in recorder.backends[member].requests
    ]


def _systems(recorder: Recorder, member: str, purpose: CallPurpose | None = None) -> list[str]:
    return [
        request.messages[0].content
        for request in recorder.backends[member].requests
        if purpose is None or request.purpose is purpose
    ]


async def test_every_call_of_an_agent_carries_its_own_system_prompt_and_only_its_own(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    members = (
        attrs.evolve(agent("a", seed=1, latency=0.2), system_prompt="Answer in French."),
        agent("b", seed=2, latency=0.3),
    )
    run = await run_tapped(config(*members), backend_factory=recorder)

    assert run.result.termination == "completed"
    assert _said(recorder, "a")
    assert all("Answer in French." in s for s in _said(recorder, "a"))
    assert not any("Answer in French." in s for s in _said(recorder, "b"))
    assert not any("Answer in French." in s for s in _systems(recorder, "a", CallPurpose.ROUND))


async def test_a_plan_mode_run_prefixes_every_round_with_the_plan_instructions(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    run = await run_tapped(
        config(agent("a", seed=1, latency=0.2), agent("b", seed=2, latency=0.3)),
        backend_factory=recorder,
        mode=CollaborationMode.PLAN,
    )

    assert run.result.termination == "completed"
    rounds = _systems(recorder, "a", CallPurpose.ROUND) + _systems(recorder, "b", CallPurpose.ROUND)
    assert rounds
    assert all(s.startswith(mode_prefix(CollaborationMode.PLAN)) for s in rounds)
