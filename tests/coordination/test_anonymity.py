"""Agents see each other under anonymous ids ``agent1..agentN``, given by sorted agent id;
answers are labelled ``agentN.M``, the M-th answer of agentN."""

from __future__ import annotations

from conclave.actors.coordination.events import RunStarted
from tests.coordination.helpers import Recorder, agent, config, run_tapped


async def test_anonymous_ids_follow_the_sorted_agent_ids_not_the_config_order(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("zeta", seed=1, latency=0.2),
            agent("alpha", seed=2, latency=0.2),
            agent("mid", seed=3, latency=0.2),
        )
    )

    [started] = run.events(RunStarted)
    assert started.agents == ("zeta", "alpha", "mid")
    assert started.anonymous_ids == ("agent3", "agent1", "agent2")
    labels = {a.agent: a.label for a in run.result.answers}
    assert labels == {"alpha": "agent1.1", "mid": "agent2.1", "zeta": "agent3.1"}


async def test_ids_sort_as_text(autojump_clock: object) -> None:
    run = await run_tapped(
        config(agent("a2", seed=1, latency=0.2), agent("a10", seed=2, latency=0.2))
    )

    [started] = run.events(RunStarted)
    assert dict(zip(started.agents, started.anonymous_ids, strict=True)) == {
        "a10": "agent1",
        "a2": "agent2",
    }


async def test_the_m_th_answer_of_an_agent_is_labelled_agentN_dot_M(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(agent("b", seed=1, latency=0.2, answers=3), agent("a", seed=2, latency=1.0))
    )

    assert [e.label for e in run.answers_added("b")] == ["agent2.1", "agent2.2", "agent2.3"]
    assert [e.label for e in run.answers_added("a")] == ["agent1.1"]


async def test_prompts_show_only_anonymous_ids_never_the_configured_ones(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    members = {"zeta-7": "a careful engineer", "alpha-3": "a patient teacher"}
    run = await run_tapped(
        config(
            *(agent(i, persona=p, seed=n, latency=0.2) for n, (i, p) in enumerate(members.items()))
        ),
        backend_factory=recorder,
    )

    assert run.result.termination == "completed"
    for member, me in (("alpha-3", "agent1"), ("zeta-7", "agent2")):
        prompts = recorder.prompts(member)
        assert prompts
        assert all(f"You are {me}" in p for p in prompts)
        assert not any(configured in p for p in prompts for configured in members)
