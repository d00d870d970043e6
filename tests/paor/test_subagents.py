"""Delegation: a plan's delegated steps run as sub-agents, child actors under the agent's own
supervisor, in dependency order (independent ones at once), nested no deeper than
``paor.max_depth``; their reports are the parent's observations."""

from __future__ import annotations

from functools import partial

import trio
import trio.lowlevel
from trio.testing import MockClock

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.paor.report import PaorEnd, PaorOutcome
from conclave.actors.paor.subagent_events import RunSubTask, SubAgentFinished, SubAgentStarted
from conclave.actors.paor.subagents import SUBAGENT, ReadOnlyTools
from conclave.actors.run.faults import with_faults
from conclave.config.schema import PaorConfig
from conclave.runtime import (
    Address,
    ChildExited,
    ChildStarted,
    ChildStopped,
    Envelope,
    MemoryTap,
    SupervisorAction,
    open_actor_system,
)
from tests.paor.helpers import TableTools
from tests.paor.subagent_helpers import HOST, RoleModel, arguments, delegated, host
from tests.runtime.helpers import Crash


async def _run(model: RoleModel, tap: MemoryTap, **kw: object) -> PaorOutcome:
    outcomes: list[PaorOutcome] = []
    tools = TableTools({"search": "util.py:1: def old_total(xs)"})
    async with open_actor_system(taps=[tap]) as system:
        done = trio.Event()
        system.spawn(HOST, host(model, tools, outcomes, done=done, **kw))  # type: ignore[arg-type]
        await done.wait()
    return outcomes[0]


async def test_a_delegated_step_runs_as_a_child_actor_of_the_agent(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    outcome = await _run(RoleModel(delegated(("1", "explore:map the code", []))), tap)

    started = [e for e in tap.of_type(ChildStarted) if e.child == "subagent:h/1.1"]
    assert [e.supervisor for e in started] == ["host:h#1/children"]
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    assert [r.end for r in outcome.subagents] == [PaorEnd.GOAL_ACHIEVED]


async def test_a_sub_agents_report_is_an_observation_of_the_parent(
    autojump_clock: MockClock,
) -> None:
    outcome = await _run(RoleModel(delegated(("1", "explore:map the code", []))), MemoryTap())

    [seen] = outcome.observations[0]
    assert seen.tool == "sub-agent:explore" and seen.success
    assert arguments(seen.arguments) == {"step": "1", "task": "map the code"}
    assert "map the code: util.py:1: def old_total(xs)" in seen.output
    # and Reflect read it:
    assert "map the code: util.py:1" in outcome.reflections[0].progress


async def test_independent_sub_agents_run_at_once_and_a_dependent_one_after_them(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    steps = delegated(("a", "explore:look at a", []), ("b", "explore:look at b", []))
    steps += delegated(("c", "worker:join a and b", ["a", "b"]))
    model = RoleModel(steps)
    await _run(model, tap)

    began = {e.step: e.at for e in tap.of_type(SubAgentStarted)}
    ended = {e.step: e.at for e in tap.of_type(SubAgentFinished)}
    assert began["a"] == began["b"]
    assert began["c"] >= max(ended["a"], ended["b"])
    # What they found is in the dependent one's task.
    assert "Step a: Done: look at a: util.py:1" in model.prompts["join a and b"]
    assert "Step b: Done: look at b" in model.prompts["join a and b"]


async def test_an_explore_sub_agent_is_offered_only_read_only_tools(
    autojump_clock: MockClock,
) -> None:
    model = RoleModel(delegated(("1", "explore:map the code", []), ("2", "worker:fix it", [])))
    await _run(model, MemoryTap())

    acting = [offered for offered in model.offered["map the code"] if "search" in offered]
    assert acting and all(offered == {"search"} for offered in acting)
    assert {"search", "edit"} in model.offered["fix it"]


async def test_an_explore_sub_agents_write_tools_are_withheld_and_a_call_is_refused() -> None:
    tools = ReadOnlyTools(TableTools())

    result = await tools.execute(ToolCall(id="c1", name="edit", arguments="{}"))

    # Withheld, not unknown: the loop makes the call a refusal the model reads, not a failed try.
    assert [schema.name for schema in tools.withheld()] == ["edit"]
    assert result.refused and "only read-only tools (search)" in (result.error or "")


async def test_a_plan_with_only_delegated_steps_makes_no_act_call(
    autojump_clock: MockClock,
) -> None:
    model = RoleModel(delegated(("1", "explore:map the code", [])))
    tools = TableTools({"search": "x"})
    outcomes: list[PaorOutcome] = []
    async with open_actor_system() as system:
        done = trio.Event()
        system.spawn(HOST, host(model, tools, outcomes, done=done))
        await done.wait()

    assert [c.arguments for c in tools.calls] == ['{"pattern": "map the code"}']


async def test_sub_agents_delegate_further_down_to_max_depth(autojump_clock: MockClock) -> None:
    tap = MemoryTap()
    model = RoleModel(delegated(("1", "worker:delegate: deeper work", [])))
    outcome = await _run(model, tap, settings=PaorConfig(max_depth=2))

    paths = [e.subagent for e in tap.of_type(SubAgentStarted)]
    assert paths == ["h/1.1", "h/1.1/1.1"]
    assert [row.agent for row in outcome.subagents[0].usage] == ["h/1.1", "h/1.1/1.1"]


async def test_a_sub_agent_at_max_depth_may_not_delegate_and_is_told_why(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    model = RoleModel(delegated(("1", "worker:delegate: deeper work", [])))
    outcome = await _run(model, tap, settings=PaorConfig(max_depth=1))

    assert [e.subagent for e in tap.of_type(SubAgentStarted)] == ["h/1.1"]
    assert outcome.subagents[0].end is PaorEnd.GOAL_ACHIEVED


async def test_finished_sub_agents_are_stopped_and_their_addresses_freed(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    await _run(RoleModel(delegated(("1", "explore:map", []), ("2", "explore:read", []))), tap)

    stopped = {e.child for e in tap.of_type(ChildStopped) if "children" in e.supervisor}
    assert stopped == {"subagent:h/1.1", "subagent:h/1.2"}


class CrashExplorers:
    """A fault plan: the explore sub-agent crashes on its task, ``times`` times."""

    def __init__(self, times: int) -> None:
        self.times = times

    def crash_during(self, actor: Address, envelope: Envelope) -> str | None:
        if actor.kind == SUBAGENT and isinstance(envelope.payload, RunSubTask) and self.times:
            self.times -= 1
            return "crashed on purpose"
        return None

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        return None

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return None


async def test_an_explore_sub_agent_crashed_on_purpose_is_restarted_and_reports(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    plan = CrashExplorers(times=1)
    model = RoleModel(delegated(("1", "explore:map the code", [])))
    outcome = await _run(model, tap, wrap=partial(with_faults, plan=plan))

    [report] = outcome.subagents
    assert report.end is PaorEnd.GOAL_ACHIEVED and report.crashes == 1
    exits = [e for e in tap.of_type(ChildExited) if e.child == "subagent:h/1.1"]
    assert [(e.action, e.error) for e in exits] == [
        (SupervisorAction.RESTART, "InjectedCrash: crashed on purpose")
    ]
    assert outcome.observations[0][0].success


async def test_an_explore_sub_agent_that_crashes_again_is_reported_and_the_parent_goes_on(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    model = RoleModel(delegated(("1", "explore:map the code", [])))
    outcome = await _run(model, tap, wrap=partial(with_faults, plan=CrashExplorers(times=2)))

    [seen] = outcome.observations[0]
    assert not seen.success
    assert seen.output.startswith("The explore sub-agent for step 1 crashed 2 times")
    assert "Its work is lost: go on without it" in seen.output
    [finished] = tap.of_type(SubAgentFinished)
    assert finished.end is None and finished.crashes == 2
    # The parent went on: it reflected on that observation and completed.
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    assert "crashed 2 times" in outcome.reflections[0].progress


async def test_a_crash_of_the_agent_stops_its_running_sub_agents(
    autojump_clock: MockClock,
) -> None:
    tap = MemoryTap()
    model = RoleModel(delegated(("1", "explore:map the code", [])), latency=10.0)
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(HOST, host(model, TableTools(), []))
        await trio.sleep(15)  # the parent planned; its sub-agent is in its first call
        assert system.is_registered(Address(SUBAGENT, "h/1.1"))

        await system.tell(HOST, Crash())
        await trio.sleep(1)

        stopped = [e for e in tap.of_type(ChildStopped) if e.child == "subagent:h/1.1"]
        assert [e.supervisor for e in stopped] == ["host:h#1/children"]
        # The restarted agent plans afresh and opens its own sub-agent (10 s on).
        assert not system.is_registered(Address(SUBAGENT, "h/1.1"))
