"""Who sees whose answers: ``all`` (everyone), ``ring`` (two neighbours in config order),
``islands:K`` (groups of K in config order). The bus sends each update only to the agents
that may see its answers."""

from __future__ import annotations

from conclave.actors.coordination.protocol import AnswerUpdate
from tests.coordination.helpers import Run, agents, config, run_tapped


def _seen_by(run: Run) -> dict[str, set[str]]:
    """Recipient agent → the authors (anonymous ids) of every update it was delivered."""
    seen: dict[str, set[str]] = {}
    for delivery, update in run.payloads(AnswerUpdate):
        authors = {view.label.split(".")[0] for view in update.answers}
        seen.setdefault(delivery.envelope.recipient.key, set()).update(authors)
    return seen


async def test_all_every_agent_gets_every_other_agents_answers(autojump_clock: object) -> None:
    run = await run_tapped(config(*agents(4, latency=0.2, jitter=0.5), visibility="all"))

    assert _seen_by(run) == {
        "a1": {"agent2", "agent3", "agent4"},
        "a2": {"agent1", "agent3", "agent4"},
        "a3": {"agent1", "agent2", "agent4"},
        "a4": {"agent1", "agent2", "agent3"},
    }


async def test_ring_each_agent_gets_only_its_two_neighbours_answers(
    autojump_clock: object,
) -> None:
    # a1..a6 are agent1..agent6; the ring wraps around.
    run = await run_tapped(config(*agents(6, latency=0.2, jitter=0.5), visibility="ring"))

    assert _seen_by(run) == {
        "a1": {"agent6", "agent2"},
        "a2": {"agent1", "agent3"},
        "a3": {"agent2", "agent4"},
        "a4": {"agent3", "agent5"},
        "a5": {"agent4", "agent6"},
        "a6": {"agent5", "agent1"},
    }
    assert run.result.termination == "completed"


async def test_islands_each_agent_gets_only_its_islands_answers(autojump_clock: object) -> None:
    run = await run_tapped(config(*agents(6, latency=0.2, jitter=0.5), visibility="islands:3"))

    assert _seen_by(run) == {
        "a1": {"agent2", "agent3"},
        "a2": {"agent1", "agent3"},
        "a3": {"agent1", "agent2"},
        "a4": {"agent5", "agent6"},
        "a5": {"agent4", "agent6"},
        "a6": {"agent4", "agent5"},
    }
    assert run.result.termination == "completed"


async def test_an_agent_votes_only_for_answers_it_can_see(autojump_clock: object) -> None:
    run = await run_tapped(config(*agents(6, latency=0.2, jitter=0.5), visibility="islands:2"))

    islands = [{"a1", "a2"}, {"a3", "a4"}, {"a5", "a6"}]
    author = {a.label: a.agent for a in run.result.answers}
    assert len(run.result.votes) == 6
    for voter, label in run.result.votes.items():
        assert any({voter, author[label]} <= island for island in islands)
