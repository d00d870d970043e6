"""Budgets: tokens and wall time per agent; a parent passes each sub-agent a share of what
is left, is charged what they used, and its result reports usage per sub-agent."""

from __future__ import annotations

from functools import partial

import pytest
import trio
from trio.testing import MockClock

from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.loop import LoopBudget, Transcript
from conclave.actors.paor.budget import Budget, share
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.report import PaorEnd, PaorOutcome
from conclave.actors.paor.subagent_events import SubAgentStarted
from conclave.actors.paor.subagents import SUBAGENT
from conclave.actors.run.faults import with_faults
from conclave.config.schema import PaorConfig
from conclave.runtime import Address, Envelope, MemoryTap, open_actor_system
from tests.paor.helpers import TableTools
from tests.paor.subagent_helpers import HOST, RoleModel, delegated, host
from tests.runtime.helpers import Crash

TWO = delegated(("1", "explore:map a", []), ("2", "explore:map b", []))


async def _run(model: RoleModel, tap: MemoryTap, **kw: object) -> PaorOutcome:
    outcomes: list[PaorOutcome] = []
    async with open_actor_system(taps=[tap]) as system:
        done = trio.Event()
        factory = host(model, TableTools({"search": "found"}), outcomes, done=done, **kw)  # type: ignore[arg-type]
        system.spawn(HOST, factory)
        await done.wait()
    return outcomes[0]


def test_a_share_is_the_fraction_of_what_is_left_split_evenly() -> None:
    assert share(Budget(tokens=1000, seconds=60.0), 0.5, 4) == Budget(tokens=125, seconds=7.5)
    assert share(Budget(), 0.5, 4) == Budget()


async def test_each_sub_agent_gets_its_share_of_the_tokens_left(autojump_clock: MockClock) -> None:
    tap = MemoryTap()
    await _run(RoleModel(TWO), tap, tokens=1000)

    # The plan's call cost 15 tokens: 985 left, half of it split between two sub-agents.
    assert [e.tokens for e in tap.of_type(SubAgentStarted)] == [246, 246]


async def test_each_sub_agent_gets_its_share_of_the_wall_time_left(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    await _run(RoleModel(TWO), tap, seconds=100.0)

    # The plan's call took 1 s: 99 s left, half of it split between two sub-agents.
    assert [e.seconds for e in tap.of_type(SubAgentStarted)] == [
        pytest.approx(24.75),
        pytest.approx(24.75),
    ]


async def test_a_sub_agent_out_of_tokens_stops_with_its_progress(
    autojump_clock: MockClock,
) -> None:
    model = RoleModel(delegated(("1", "explore:map a", [])))
    outcome = await _run(model, MemoryTap(), tokens=100)

    [report] = outcome.subagents
    assert report.end is PaorEnd.BUDGET_SPENT
    assert report.summary.startswith("Stopped: its budget ran out")
    assert report.usage[0].budget == Budget(tokens=42)
    assert not outcome.observations[0][0].success


async def test_a_sub_agent_out_of_wall_time_stops_with_its_progress(
    autojump_clock: MockClock,
) -> None:
    model = RoleModel(delegated(("1", "explore:map a", [])))
    outcome = await _run(model, MemoryTap(), seconds=4.0)

    [report] = outcome.subagents
    assert report.end is PaorEnd.BUDGET_SPENT
    assert report.seconds == pytest.approx(1.5)
    assert "wall time ran out" in report.summary


async def test_the_parent_is_charged_what_its_sub_agents_used(autojump_clock: MockClock) -> None:
    model = RoleModel(delegated(("1", "explore:map a", []), own=True))
    settings = PaorConfig(subagent_share=1.0)
    outcome = await _run(model, MemoryTap(), tokens=100, settings=settings)

    # The sub-agent used 60 of the 85 left after planning: the parent's own calls run out.
    assert outcome.subagents[0].tokens == 60
    assert outcome.end is PaorEnd.BUDGET_SPENT


async def test_the_result_reports_usage_per_sub_agent(autojump_clock: MockClock) -> None:
    outcome = await _run(RoleModel(TWO), MemoryTap())

    assert "Sub-agents: 2 (2 done), 120 tokens, 8 LLM calls" in outcome.summary()
    detail = outcome.summary(verbose=True)
    assert "- h/1.1 (explore, step 1): goal_achieved, 60 tokens, 4 calls" in detail
    assert "- h/1.2 (explore, step 2): goal_achieved, 60 tokens, 4 calls" in detail
    assert "- h/1.1" not in outcome.summary()


async def test_a_loop_budgets_own_token_cap_still_holds_under_a_larger_paor_budget(
    autojump_clock: MockClock,
) -> None:
    model = RoleModel([{"id": "1", "action": "search", "tools": ["search"]}])
    loop = PaorLoop(
        backend=model,
        tools=TableTools(),
        budget=LoopBudget(max_tokens=20),
        settings=PaorConfig(),
        tokens=1000,
    )
    outcome = await loop.run(Transcript([ChatMessage(role="user", content="look")]))

    assert outcome.end is PaorEnd.BUDGET_SPENT
    assert "the round used 30 of its 20 tokens" in outcome.error


class _CrashSubAgentsOnCue:
    """A fault plan: a sub-agent crashes when it is sent ``Crash`` (mid-work)."""

    def crash_during(self, actor: Address, envelope: Envelope) -> str | None:
        crash = actor.kind == SUBAGENT and isinstance(envelope.payload, Crash)
        return "crashed on cue" if crash else None

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        return None

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None


async def test_a_restarted_sub_agent_has_only_what_is_left_of_its_wall_time_share(
    autojump_clock: MockClock,
) -> None:
    outcomes: list[PaorOutcome] = []
    model = RoleModel(delegated(("1", "explore:map a", [])))
    wrap = partial(with_faults, plan=_CrashSubAgentsOnCue())
    async with open_actor_system(taps=[MemoryTap()]) as system:
        done = trio.Event()
        tools = TableTools({"search": "found"})
        system.spawn(HOST, host(model, tools, outcomes, seconds=10.0, wrap=wrap, done=done))
        # The parent planned in 1 s: its sub-agent's share is 4.5 s. Crash it 2.5 s in.
        await trio.sleep(3.5)
        await system.tell(Address(SUBAGENT, "h/1.1"), Crash())
        await done.wait()

    # Its restart has the 2 s left of its share, not 4.5 s afresh.
    [report] = outcomes[0].subagents
    assert report.crashes == 1 and report.end is PaorEnd.BUDGET_SPENT
    assert report.seconds <= 4.5
