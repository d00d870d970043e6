"""The quiet-period hold (a headline default): while answers keep arriving, updates, vote
resets and "you may vote now" wait until none has arrived for ``quiet_period`` seconds, so
a burst of answers costs one round per agent. The hold covers the first answer of a burst
too: the moment an answer is accepted, answers are no longer quiet."""

from __future__ import annotations

import pytest

from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.coordination.protocol import VotingOpen
from conclave.config.loader import parse_config
from conclave.runtime import Held
from tests.coordination.helpers import agent, config, run_tapped

# Three answers 50 ms apart: one burst.
BURST = config(
    agent("a", seed=1, latency=1.0),
    agent("b", seed=2, latency=1.05),
    agent("c", seed=3, latency=1.1),
    quiet_period=0.1,
)


async def test_voting_opens_for_the_first_answerer_only_once_the_burst_is_quiet(
    autojump_clock: object,
) -> None:
    run = await run_tapped(BURST)

    first: AnswerAdded = run.answers_added("a")[0]
    held = [
        e
        for e in run.events(Held)
        if isinstance(e.envelope.payload, VotingOpen) and e.envelope.recipient.key == "a"
    ]
    assert held and held[0].at == first.at
    [(opened, _)] = run.payloads(VotingOpen, to="a")
    last = run.answers_added()[-1]
    assert opened.at == pytest.approx(last.at + 0.1)


async def test_a_burst_costs_one_answer_and_one_vote_per_agent_and_a_presentation(
    autojump_clock: object,
) -> None:
    run = await run_tapped(BURST)

    assert run.result.llm_calls == 2 * 3 + 1
    assert run.result.restarts == 0


async def test_a_config_that_names_no_quiet_period_holds_for_the_default_100_ms(
    autojump_clock: object,
) -> None:
    # The default, as a user's file gets it: no ``orchestrator`` section at all.
    unnamed = parse_config(
        {
            "agents": [
                {"id": agent, "backend": {"type": "scripted", "seed": seed, "latency": latency}}
                for agent, seed, latency in (("a", 1, 1.0), ("b", 2, 1.05), ("c", 3, 1.1))
            ]
        }
    )
    run = await run_tapped(unnamed)

    [(opened, _)] = run.payloads(VotingOpen, to="a")
    last = run.answers_added()[-1]
    assert last.at == pytest.approx(1.1)
    assert opened.at == pytest.approx(last.at + 0.1)
