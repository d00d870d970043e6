"""A presenter whose calls keep failing has ``failing_agent_grace``, as any agent whose peers
are all done: then the chosen answer stands verbatim (``presentation_failed``,
``presentation_error``) and the run completes. A call that succeeds ends the grace; a later
failure starts a new one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import trio

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.coordination.events import PresentationFailed
from conclave.actors.llm.protocol import (
    CallPurpose,
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    ToolCall,
)
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from tests.coordination.helpers import agent, config, run_tapped

HANG = None
"""A presentation call that never answers (it fails at ``call_timeout``)."""
CALL_TIMEOUT = 20.0
GRACE = 15.0


class _Presenting:
    """The agent's scripted backend, except for its presentation calls, which play
    ``presentation`` in turn (``HANG``, or a reply); past its end they hang."""

    def __init__(self, inner: ScriptedBackend, presentation: Sequence[ChatMessage | None]) -> None:
        self._inner = inner
        self._presentation = list(presentation)

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if request.purpose is not CallPurpose.PRESENT:
            return await self._inner.complete(request, sink=sink)
        reply = self._presentation.pop(0) if self._presentation else HANG
        if reply is HANG:
            await trio.sleep_forever()
        assert reply is not None
        return Completion(message=reply)


def _panel(
    presentation: Sequence[ChatMessage | None], tries: int = 3
) -> tuple[ConclaveConfig, Callable[..., LLMBackend]]:
    """Three agents that vote for a1, whose presentation calls play ``presentation``."""
    members = tuple(agent(f"a{i}", seed=i, latency=0.2, vote="agent1") for i in (1, 2, 3))
    cfg = config(
        *members,
        call_timeout=CALL_TIMEOUT,
        failing_agent_grace=GRACE,
        max_tries_per_round=tries,
    )

    def backend(member: AgentConfig) -> LLMBackend:
        assert isinstance(member.backend, ScriptedBackendConfig)
        seed = member.backend.seed
        inner = ScriptedBackend(agent_id=member.id, persona="", policy=member.backend, seed=seed)
        return _Presenting(inner, presentation) if member.id == "a1" else inner

    return cfg, backend


async def test_a_presenter_that_keeps_failing_gives_way_to_the_chosen_answer_after_the_grace(
    autojump_clock: object,
) -> None:
    cfg, backends = _panel([HANG])

    run = await run_tapped(cfg, backend_factory=backends)

    [failed] = run.events(PresentationFailed)
    presenting = [e for e in run.events(LlmRequestFinished) if e.purpose is CallPurpose.PRESENT]
    assert failed.at == pytest.approx(presenting[0].at + GRACE)  # its first failure, + grace
    assert not failed.retrying
    assert "kept failing for 15s (orchestrator.failing_agent_grace)" in failed.error
    result = run.result
    assert (result.termination, result.presenter, result.winner) == ("completed", None, "a1")
    assert result.final_answer == run.answers_added("a1")[-1].content
    assert result.presentation_error == failed.error


async def test_a_presenter_that_recovers_starts_a_new_grace_when_it_fails_again(
    autojump_clock: object,
) -> None:
    # Its first call fails at 20 s; the next succeeds (a reply calling a tool, a failed try
    # for want of tools), which ends the grace; the one after fails at about 40 s.
    tool = ChatMessage(
        role="assistant", tool_calls=(ToolCall(id="t1", name="list_directory", arguments="{}"),)
    )
    cfg, backends = _panel([HANG, tool, HANG], tries=6)

    run = await run_tapped(cfg, backend_factory=backends)

    [failed] = run.events(PresentationFailed)
    presenting = [e for e in run.events(LlmRequestFinished) if e.purpose is CallPurpose.PRESENT]
    assert failed.at == pytest.approx(presenting[2].at + GRACE)  # not presenting[0]'s
    assert "failing_agent_grace" in failed.error
    assert run.result.final_answer == run.answers_added("a1")[-1].content


async def test_a_presenter_that_recovers_within_the_grace_presents(autojump_clock: object) -> None:
    cfg, backends = _panel([HANG, ChatMessage(role="assistant", content="The presented answer.")])

    run = await run_tapped(cfg, backend_factory=backends)

    assert run.events(PresentationFailed) == []
    assert (run.result.final_answer, run.result.presenter) == ("The presented answer.", "a1")
