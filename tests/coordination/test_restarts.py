"""A restarted actor gets back what its predecessor was doing (OTP: a restarted incarnation
re-arms its in-flight work in ``started()`` from run-owned state). Each test crashes one
actor at the moment its work is in flight, through the run's fault seam, and checks that
the run neither hangs nor loses anything."""

from __future__ import annotations

import trio

from conclave.actors.agent.events import LlmRequestStarted
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    FinalAnswerProduced,
    PresentationFailed,
)
from conclave.actors.coordination.protocol import (
    AgentFailed,
    AnswerAccepted,
    AnswersRequest,
    AnswersSnapshot,
    AnswerUpdate,
    AnswerVerdict,
    Present,
    SubmitAnswer,
)
from conclave.actors.coordination.rules import QUIET
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.driver import BUS, COORDINATOR, RunSpec, build_backend, open_run
from conclave.config.schema import AgentConfig
from conclave.runtime import ChildExited, Released, SupervisorEscalated
from tests.coordination.faults import CrashAfter, CrashOnPoke, Poke, crashes
from tests.coordination.helpers import RUN_LIMIT, TASK, WaitingTap, agent, config, run_tapped

# Everyone votes for b (agent2), so b presents.
VOTING_FOR_B = config(
    agent("a", seed=1, latency=1.0, vote="agent2"),
    agent("b", seed=2, latency=1.0, vote="agent2"),
    agent("c", seed=3, latency=1.0, vote="agent2"),
)


def _presentations(tap: WaitingTap) -> list[LlmRequestStarted]:
    return [e for e in tap.of_type(LlmRequestStarted) if e.purpose == "present"]


async def test_a_presenter_that_crashes_while_presenting_is_asked_again_and_presents(
    autojump_clock: object,
) -> None:
    plan = CrashAfter(agent_address("b"), lambda e: isinstance(e.payload, Present))
    tap = WaitingTap()
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=VOTING_FOR_B, faults=plan), taps=[tap]) as h:
            result = await h.result()

    assert plan.crashed == 1
    [failed] = tap.of_type(PresentationFailed)
    assert (failed.presenter, failed.retrying) == ("b", True)
    assert "b" in failed.error
    assert [e.agent for e in _presentations(tap)] == ["b", "b"]
    assert result.termination == "completed"
    assert result.presenter == "b"
    assert result.presentation_error is None
    [final] = tap.of_type(FinalAnswerProduced)
    assert final.presenter == "b"


async def test_a_presenter_that_keeps_crashing_leaves_the_winners_answer_and_says_so(
    autojump_clock: object,
) -> None:
    plan = CrashAfter(agent_address("b"), lambda e: isinstance(e.payload, Present), times=99)
    tap = WaitingTap()
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=VOTING_FOR_B, faults=plan), taps=[tap]) as h:
            result = await h.result()

    # Three tries (max_tries_per_round), then the answer the vote chose stands.
    assert plan.crashed == 3
    failures = tap.of_type(PresentationFailed)
    assert [f.retrying for f in failures] == [True, True, False]
    assert result.termination == "completed"
    assert result.winner == "b"
    assert result.final_answer == next(a.content for a in result.answers if a.agent == "b")
    assert result.presenter is None
    assert result.presentation_error == failures[-1].error
    [final] = tap.of_type(FinalAnswerProduced)
    assert final.presenter is None


async def test_a_coordinator_restart_during_presentation_asks_the_presenter_again(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    spec = RunSpec(task=TASK, config=VOTING_FOR_B, faults=CrashOnPoke())
    with trio.fail_after(RUN_LIMIT):
        async with open_run(spec, taps=[tap]) as h:
            await tap.wait_for(LlmRequestStarted, lambda e: e.purpose == "present")
            h.system.tell_nowait(COORDINATOR, Poke())
            result = await h.result()

    assert crashes(tap.events, COORDINATOR)
    assert result.termination == "completed"
    assert result.presenter == "b"
    assert result.presentation_error is None
    # The presenter was still writing when the request came again: it answered the new one.
    assert [e.agent for e in _presentations(tap)] == ["b"]


async def test_a_bus_restart_rearms_its_quiet_timer(autojump_clock: object) -> None:
    # The bus crashes with the quiet timer running; "you may vote now" is held until quiet.
    plan = CrashAfter(BUS, lambda e: isinstance(e.payload, AnswerAccepted))
    tap = WaitingTap()
    cfg = config(
        agent("a", seed=1, latency=1.0),
        agent("b", seed=2, latency=3.0),
        quiet_period=0.5,
        first_vote_wait=None,
    )
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=cfg, faults=plan), taps=[tap]) as h:
            result = await h.result()
            assert h.system.facts.get(QUIET) is True

    assert plan.crashed == 1
    assert result.termination == "completed"
    assert set(result.votes) == {"a", "b"}
    first = tap.of_type(AnswerAdded)[0]
    released = [e for e in tap.of_type(Released) if e.at < 3.0]
    assert released
    assert all(e.at == first.at + 0.5 for e in released)


async def test_a_bus_restart_sends_the_updates_its_predecessor_collected(
    autojump_clock: object,
) -> None:
    # Three answers at the same moment: the bus collects the first while the others are
    # queued, and crashes before it has sent anything.
    plan = CrashAfter(BUS, lambda e: isinstance(e.payload, AnswerAccepted))
    tap = WaitingTap()
    cfg = config(
        agent("a", seed=1, latency=1.0),
        agent("b", seed=2, latency=1.0),
        agent("c", seed=3, latency=1.0),
        quiet_period=None,
    )
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=cfg, faults=plan), taps=[tap]) as h:
            await h.result()

    assert plan.crashed == 1
    seen: dict[str, set[str]] = {}
    for delivered in tap.events:
        envelope = getattr(delivered, "envelope", None)
        if envelope is not None and isinstance(envelope.payload, AnswerUpdate):
            seen.setdefault(envelope.recipient.key, set()).update(
                v.label for v in envelope.payload.answers
            )
    assert seen == {
        "a": {"agent2.1", "agent3.1"},
        "b": {"agent1.1", "agent3.1"},
        "c": {"agent1.1", "agent2.1"},
    }


async def test_an_answers_request_for_an_unknown_agent_gets_an_error_reply(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=VOTING_FOR_B), taps=[tap]) as h:
        reply = await h.system.ask(COORDINATOR, AnswersRequest(agent="nobody"))
        result = await h.result()

    assert isinstance(reply, AnswersSnapshot)
    assert reply.answers == ()
    assert reply.error is not None
    assert "no agent 'nobody' in this run" in reply.error
    assert "a, b, c" in reply.error
    assert not [e for e in tap.events if isinstance(e, ChildExited) and e.error]
    assert result.termination == "completed"
    assert result.winner == "b"


async def test_a_repeated_submission_of_a_round_gets_its_verdict_again_and_adds_nothing(
    autojump_clock: object,
) -> None:
    # An agent that crashed waiting for its verdict submits the same round again.
    tap = WaitingTap()
    cfg = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=50.0))
    async with open_run(RunSpec(task=TASK, config=cfg), taps=[tap]) as h:
        first: AnswerAdded = await tap.wait_for(AnswerAdded)
        again = await h.system.ask(
            COORDINATOR, SubmitAnswer(agent="a", content=first.content, round=1, shown=())
        )
        h.cancel()
        await h.result()

    assert again == AnswerVerdict(accepted=True, label=first.label, order=1)  # as the first time
    assert len(tap.of_type(AnswerAdded)) == 1


class _Raising:
    """A backend with a bug: it raises something that is not an LLMError."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        await trio.sleep(0.5)
        raise self.error


async def test_an_agent_whose_backend_raises_any_exception_is_excluded_and_the_run_goes_on(
    autojump_clock: object,
) -> None:
    def backends(member: AgentConfig) -> LLMBackend:
        if member.id == "buggy":
            return _Raising(KeyError("choices"))
        return build_backend(member)

    run = await run_tapped(
        config(agent("a", seed=1), agent("buggy", seed=2), agent("c", seed=3)),
        backend_factory=backends,
    )

    [excluded] = run.events(AgentExcluded)
    assert excluded.agent == "buggy"
    assert excluded.reason == "3 tries failed; last error: KeyError: 'choices'"
    assert run.llm_calls("buggy") == 3
    assert run.events(SupervisorEscalated) == []
    assert not [e for e in run.events(ChildExited) if e.error]
    assert run.result.termination == "completed"
    assert set(run.result.votes) == {"a", "c"}


async def test_an_agent_failed_for_an_agent_the_run_does_not_have_changes_nothing(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=VOTING_FOR_B), taps=[tap]) as h:
        h.system.tell_nowait(COORDINATOR, AgentFailed(agent="nobody", reason="made up"))
        result = await h.result()

    assert tap.of_type(AgentExcluded) == []
    assert result.failed_agents == {}
    assert result.winner == "b"
