"""When the vote's winner was excluded, ``synthesize`` still synthesizes: another live agent
presents, and an event says who and why. The answer is never silently reused verbatim."""

from __future__ import annotations

from conclave.actors.agent.events import LlmRequestStarted
from conclave.actors.coordination.events import PresenterReplaced, VotingComplete
from conclave.actors.llm.protocol import (
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    LLMError,
)
from conclave.actors.run.driver import build_backend
from conclave.config.schema import AgentConfig, ConclaveConfig, FinalAnswerStrategy
from tests.coordination.helpers import agent, config, run_tapped


class _FailsAfterItsFirstAnswer:
    """b answers, then every call fails: it is excluded after voting has begun."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner
        self.calls = 0

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.calls += 1
        if self.calls > 1:
            raise LLMError("the endpoint went away")
        return await self.inner.complete(request)


def _backends(member: AgentConfig) -> LLMBackend:
    backend = build_backend(member)
    return _FailsAfterItsFirstAnswer(backend) if member.id == "b" else backend


def _everyone_votes_for_b(strategy: FinalAnswerStrategy) -> ConclaveConfig:
    return config(
        agent("a", seed=1, latency=1.0, vote="agent2"),
        agent("b", seed=2, latency=1.0, vote="agent2"),
        agent("c", seed=3, latency=1.0, vote="agent2"),
        final_answer_strategy=strategy,
    )


async def test_synthesize_with_an_excluded_winner_has_another_agent_synthesize(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        _everyone_votes_for_b(FinalAnswerStrategy.SYNTHESIZE),
        backend_factory=_backends,
    )

    [complete] = run.events(VotingComplete)
    assert complete.winner == "b"
    [replaced] = run.events(PresenterReplaced)
    assert (replaced.winner, replaced.presenter) == ("b", "a")
    assert "b was excluded" in replaced.reason
    assert "a synthesizes instead" in replaced.reason
    [presentation] = [e for e in run.events(LlmRequestStarted) if e.purpose == "present"]
    assert presentation.agent == "a"
    assert run.result.winner == "b"
    assert run.result.presenter == "a"
    final = run.result.final_answer or ""
    assert "Synthesis" in final
    assert final != run.answer_of("b")


async def test_winner_present_with_an_excluded_winner_says_its_answer_stands(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        _everyone_votes_for_b(FinalAnswerStrategy.WINNER_PRESENT),
        backend_factory=_backends,
    )

    [replaced] = run.events(PresenterReplaced)
    assert (replaced.winner, replaced.presenter) == ("b", None)
    assert "its answer stands verbatim" in replaced.reason
    assert run.result.final_answer == run.answer_of("b")
    assert run.result.presenter is None
