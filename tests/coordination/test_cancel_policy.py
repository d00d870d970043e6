"""With the ``cancel`` in-flight policy the next round never starts before the cancelled one
has ended: a backend may take a while to unwind a cancelled request (an SDK closing its
stream), and two rounds of one agent must never overlap."""

from __future__ import annotations

import trio

from conclave.actors.agent.events import LlmRequestFinished, RoundRestarted
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.driver import build_backend
from conclave.config.schema import AgentConfig, InFlightPolicy
from tests.coordination.helpers import agent, config, run_tapped

UNWIND = 0.5


class _SlowToCancel:
    """Takes ``UNWIND`` seconds to clean up after a cancelled request."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        try:
            return await self.inner.complete(request)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await trio.sleep(UNWIND)
            raise


def _slow_to_cancel(member: AgentConfig) -> LLMBackend:
    return _SlowToCancel(build_backend(member))


async def test_with_the_cancel_policy_the_next_round_starts_after_the_cancelled_one_ended(
    autojump_clock: object,
) -> None:
    # fast answers at 1.0 and is mid-way through its vote round when b answers at 1.5.
    run = await run_tapped(
        config(
            agent("fast", seed=1, latency=1.0),
            agent("b", seed=2, latency=1.5),
            in_flight_policy=InFlightPolicy.CANCEL,
            quiet_period=None,
            first_vote_wait=None,
        ),
        backend_factory=_slow_to_cancel,
    )

    [restart] = [e for e in run.events(RoundRestarted) if e.agent == "fast"]
    [cancelled] = [
        e for e in run.events(LlmRequestFinished) if e.agent == "fast" and e.outcome == "cancelled"
    ]
    assert cancelled.at == restart.at + UNWIND
    [next_round] = [r for r in run.rounds("fast") if r.round == restart.round + 1]
    assert run.position(next_round) > run.position(cancelled)
    assert next_round.at == cancelled.at
    assert run.result.termination == "completed"


async def test_the_cancel_policy_still_restarts_at_once_when_nothing_is_unwinding(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("fast", seed=1, latency=1.0),
            agent("b", seed=2, latency=1.5),
            in_flight_policy=InFlightPolicy.CANCEL,
            quiet_period=None,
            first_vote_wait=None,
        )
    )

    [restart] = [e for e in run.events(RoundRestarted) if e.agent == "fast"]
    [next_round] = [r for r in run.rounds("fast") if r.round == restart.round + 1]
    assert next_round.at == restart.at
