"""``disable_injection`` on its own makes agents independent: no other agent's answer in
their prompts (neither as an update nor in the snapshot a vote round reads), and nothing
another agent does restarts a round or resets a vote."""

from __future__ import annotations

from conclave.actors.agent.events import RoundRestarted
from conclave.actors.coordination.events import VotesCleared
from conclave.actors.coordination.protocol import VotesReset
from tests.coordination.helpers import Recorder, agents, config, run_tapped

INDEPENDENT = config(*agents(3, latency=1.0, jitter=0.5, answers=2), disable_injection=True)


async def test_with_injection_disabled_no_prompt_shows_another_agents_answer(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    run = await run_tapped(INDEPENDENT, backend_factory=recorder)

    for member in ("a1", "a2", "a3"):
        others = [a.content for a in run.result.answers if a.agent != member]
        rounds = [
            "\n".join(m.content for m in request.messages)
            for request in recorder.backends[member].requests
            if request.tools  # a round; a presentation is not coordination
        ]
        assert len(rounds) >= 3  # two answers and a vote
        assert not [r for r in rounds if any(text in r for text in others)]


async def test_with_injection_disabled_nothing_another_agent_does_restarts_or_resets(
    autojump_clock: object,
) -> None:
    run = await run_tapped(INDEPENDENT)

    assert run.events(RoundRestarted) == []
    assert run.events(VotesCleared) == []
    assert run.delivered(VotesReset) == []
    assert len(run.result.answers) == 6
    # Each could only vote for the answer it was shown: its own.
    author = {a.label: a.agent for a in run.result.answers}
    assert {voter: author[label] for voter, label in run.result.votes.items()} == {
        "a1": "a1",
        "a2": "a2",
        "a3": "a3",
    }
