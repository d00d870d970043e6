"""A result names a presenter only if a presentation ran: a single agent with refinement off
answers once, that answer is the final answer, and nobody presented it."""

from __future__ import annotations

from conclave.actors.agent.events import LlmRequestStarted
from conclave.actors.coordination.events import FinalAnswerProduced
from conclave.actors.run.result import DecidedBy
from conclave.config.modes import AgentMode, ModeState, apply_modes
from tests.coordination.helpers import agent, config, run_tapped


async def test_a_single_agent_with_refinement_off_names_no_presenter(
    autojump_clock: object,
) -> None:
    cfg = apply_modes(
        config(agent("solo", seed=1, latency=0.5)),
        ModeState(agent_mode=AgentMode.SINGLE, refinement=False),
    )

    run = await run_tapped(cfg)

    assert [e for e in run.events(LlmRequestStarted) if e.purpose == "present"] == []
    assert run.result.final_answer == run.answer_of("solo")
    assert run.result.winner == "solo"
    assert run.result.presenter is None
    [final] = run.events(FinalAnswerProduced)
    assert final.presenter is None
    assert run.result.decided_by is DecidedBy.NO_VOTES
