"""The InjectionBus: accepted answers reach the other agents as updates, an agent restarts
its round once per batch of updates (never once per update), and "injection off" is a rule
that turns every update into a DeadLetter."""

from __future__ import annotations

from conclave.actors.agent.events import RoundRestarted
from conclave.actors.coordination.protocol import AnswerUpdate
from conclave.config.modes import ModeState, apply_modes
from conclave.config.schema import ConclaveConfig, InFlightPolicy
from conclave.runtime import DeadLetter, DeadLetterCause, Held
from tests.coordination.helpers import Recorder, agent, config, run_tapped


def _mid_round_config(policy: InFlightPolicy, others: tuple[float, float, float]) -> ConclaveConfig:
    """``fast`` answers at t=1.0 and is then mid-round (its vote round) until t=2.0, while
    b, c and d answer at the given times. No quiet period: updates go out at once, so what
    is measured is the agent's own coalescing; no first-vote wait, so fast votes while the
    others answer. Anonymous ids: b, c, d, fast = agent1..4."""
    b, c, d = others
    return config(
        agent("fast", seed=1, latency=1.0),
        agent("b", seed=2, latency=b),
        agent("c", seed=3, latency=c),
        agent("d", seed=4, latency=d),
        in_flight_policy=policy,
        quiet_period=None,
        first_vote_wait=None,
    )


async def test_cancel_policy_a_burst_of_answers_mid_round_causes_one_restart(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    run = await run_tapped(
        _mid_round_config(InFlightPolicy.CANCEL, (1.5, 1.5, 1.5)), backend_factory=recorder
    )

    assert run.delivered(AnswerUpdate, to="fast")
    assert run.restarts("fast") == 1
    [restart] = [e for e in run.events(RoundRestarted) if e.agent == "fast"]
    assert restart.policy is InFlightPolicy.CANCEL
    # the one restarted round saw all three new answers
    restarted_prompt = recorder.prompts("fast")[-1]
    assert all(f"<{label} " in restarted_prompt for label in ("agent1.1", "agent2.1", "agent3.1"))
    assert run.result.restarts == 1
    assert run.result.termination == "completed"


async def test_finish_policy_answers_arriving_during_a_round_cause_one_rerun(
    autojump_clock: object,
) -> None:
    recorder = Recorder()
    run = await run_tapped(
        _mid_round_config(InFlightPolicy.FINISH, (1.2, 1.4, 1.6)), backend_factory=recorder
    )

    # three separate updates reached fast during its round...
    assert len(run.delivered(AnswerUpdate, to="fast")) == 3
    # ...and its round was re-run once, when it finished, with all three answers
    assert run.restarts("fast") == 1
    [restart] = [e for e in run.events(RoundRestarted) if e.agent == "fast"]
    assert restart.policy is InFlightPolicy.FINISH
    assert restart.at == 2.0
    rerun_prompt = recorder.prompts("fast")[-1]
    assert all(f"<{label} " in rerun_prompt for label in ("agent1.1", "agent2.1", "agent3.1"))


async def test_finish_policy_a_burst_of_answers_mid_round_causes_one_rerun(
    autojump_clock: object,
) -> None:
    run = await run_tapped(_mid_round_config(InFlightPolicy.FINISH, (1.5, 1.5, 1.5)))

    assert run.restarts("fast") == 1
    assert run.result.restarts == 1


async def test_cancel_policy_restarts_at_once_so_answers_apart_are_separate_batches(
    autojump_clock: object,
) -> None:
    # The contrast with "finish": cancel restarts as soon as a batch arrives, so three
    # answers 0.2 s apart are three batches and three restarts.
    run = await run_tapped(_mid_round_config(InFlightPolicy.CANCEL, (1.2, 1.4, 1.6)))

    assert run.restarts("fast") == 3
    assert len(run.delivered(AnswerUpdate, to="fast")) == 3


async def test_an_agent_gets_no_updates_before_its_first_answer(autojump_clock: object) -> None:
    run = await run_tapped(
        config(
            agent("fast", seed=1, latency=0.1),
            agent("slow", seed=2, latency=1.0),
            in_flight_policy=InFlightPolicy.CANCEL,
            quiet_period=None,
        )
    )

    [slow_answer] = run.answers_added("slow")
    held = [
        e
        for e in run.events(Held)
        if isinstance(e.envelope.payload, AnswerUpdate) and e.envelope.recipient.key == "slow"
    ]
    assert held
    assert held[0].reason == "slow has not answered yet"
    updates = run.delivered(AnswerUpdate, to="slow")
    assert updates
    assert all(run.position(u) > run.position(slow_answer) for u in updates)
    assert run.restarts("slow") == 0


async def test_injection_off_drops_every_update_as_a_dead_letter_and_nobody_restarts(
    autojump_clock: object,
) -> None:
    # Injection off as the refinement-off mode uses it; answers land at 1.0, 1.5 and 2.0.
    cfg = apply_modes(
        config(
            agent("a", seed=1, latency=1.0),
            agent("b", seed=2, latency=1.5),
            agent("c", seed=3, latency=2.0),
        ),
        ModeState(refinement=False),
    )
    assert cfg.orchestrator.disable_injection

    run = await run_tapped(cfg)

    dropped = [e for e in run.events(DeadLetter) if isinstance(e.envelope.payload, AnswerUpdate)]
    assert {e.envelope.recipient.key for e in dropped} == {"a", "b", "c"}
    assert all(e.cause is DeadLetterCause.DROPPED for e in dropped)
    assert all(e.reason == "injection disabled: agents work independently" for e in dropped)
    assert run.delivered(AnswerUpdate) == []
    assert run.events(RoundRestarted) == []
    assert run.result.restarts == 0
    assert run.result.termination == "completed"


def _refining_config(*, disable_injection: bool) -> ConclaveConfig:
    """``a`` answers at t=1.0, then refines: its second answer's round (t=1.0..2.0) is in
    flight when ``b`` answers at t=1.5."""
    return config(
        agent("a", seed=1, latency=1.0, answers=2),
        agent("b", seed=2, latency=1.5),
        disable_injection=disable_injection,
        quiet_period=None,
        first_vote_wait=None,
    )


async def test_injection_off_leaves_a_round_in_flight_alone(autojump_clock: object) -> None:
    run = await run_tapped(_refining_config(disable_injection=True))

    assert run.delivered(AnswerUpdate, to="a") == []
    assert run.restarts("a") == 0
    assert [e.at for e in run.answers_added("a")] == [1.0, 2.0]


async def test_injection_on_restarts_that_round_in_flight(autojump_clock: object) -> None:
    # Control for the test above: b's answer reaches a mid-round and a re-runs the round.
    run = await run_tapped(_refining_config(disable_injection=False))

    assert run.delivered(AnswerUpdate, to="a")
    assert run.restarts("a") == 1
    assert [e.at for e in run.answers_added("a")] == [1.0, 3.0]


async def test_updates_carry_previews_truncated_to_the_configured_length(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.1),
            agent("b", seed=2, latency=0.2),
            answer_preview_chars=20,
        )
    )

    views = [v for _, update in run.payloads(AnswerUpdate) for v in update.answers]
    assert views
    full = {a.label: a.content for a in run.result.answers}
    for view in views:
        assert view.truncated
        assert view.content == full[view.label][:20] + " …"
