"""RunView agrees with RunResult, whatever the run went through.

Random small runs on the scripted backend (any visibility, in-flight policy, agent mode,
refinement on or off, agents that give the same answer, crashes of the run's actors on
purpose, a cancel or a timeout mid-run) are folded into a :class:`RunView` twice: from the
events as a tap hears them, and from the event log decoded back as ``conclave replay``
reads it. Both views must hold the votes, the
tally, the answers and the winner the run returned: a reader that applies the events
literally can follow any run, with no coordination rule of its own.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import (
    AgentExcluded,
    VoteAdded,
    VotesCleared,
    VotingComplete,
)
from conclave.actors.events.view import RunView
from conclave.actors.run.driver import BUS, COORDINATOR, RunSpec, open_run
from conclave.actors.run.result import RunResult
from conclave.config.modes import AgentMode, ModeState, apply_modes
from conclave.config.schema import ConclaveConfig, FinalAnswerStrategy, InFlightPolicy
from conclave.runtime import (
    ActorSystem,
    Address,
    ChildExited,
    Envelope,
    Event,
    JsonlEventLog,
    MemoryTap,
    SupervisorAction,
)
from conclave.runtime.eventlog import MAX_LINE_BYTES, EventLogStream
from tests.chaos.harness import MemoryFile
from tests.coordination.faults import Poke
from tests.coordination.helpers import TASK, agent, config

EXAMPLES = 1_000
SAME = "The answer every deterministic model gives."
"""Given by the agents scripted to write it: their answers repeat each other's."""
HANG_BOUND = 24 * 3600.0
"""Virtual seconds after which a run counts as hung (scripted latencies are under 1 s)."""


@attrs.frozen(kw_only=True)
class Crash:
    """Crash the actor ``actor`` (0: the coordinator, 1: the bus, 2 on: the agents in
    config order) right after the ``after``-th message it handles (counted from 1); with
    ``after=None``, right after an agent's vote is added (the run pokes it then)."""

    actor: int
    after: int | None


@attrs.frozen(kw_only=True)
class Case:
    config: ConclaveConfig
    crashes: tuple[Crash, ...]
    start_crash: tuple[int, int] | None
    """An actor (numbered as in :class:`Crash`) and its incarnation that crashes in
    ``started``: the run fails, or the agent is excluded, by design."""
    cancel_at: float | None
    """Virtual seconds after the start at which the run is cancelled (Ctrl+C), if set."""


class Plan:
    """The run's :class:`~actors.run.faults.FaultPlan`: crashes where the case says. It is
    also a tap: an added vote of an agent planned to crash after its vote sends that agent
    to :attr:`pokes`, and the agent crashes right after it handles the :class:`Poke`."""

    def __init__(self, case: Case, actors: list[Address]) -> None:
        self.pokes, self._poking = trio.open_memory_channel[Address](math.inf)
        self._after: dict[Address, set[int | None]] = {}
        for crash in case.crashes:
            self._after.setdefault(actors[crash.actor % len(actors)], set()).add(crash.after)
        self._start: tuple[Address, int] | None = None
        if case.start_crash is not None:
            actor, incarnation = case.start_crash
            self._start = (actors[actor % len(actors)], incarnation)
        self._handled: Counter[Address] = Counter()

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        self._handled[actor] += 1
        planned = self._after.get(actor, set())
        if self._handled[actor] in planned:
            return f"planned crash of {actor} after message {self._handled[actor]}"
        if isinstance(envelope.payload, Poke) and None in planned:
            planned.discard(None)
            return f"planned crash of {actor} after its vote"
        return None

    def record(self, event: Event) -> None:
        if isinstance(event, VoteAdded):
            voter = agent_address(event.voter)
            if None in self._after.get(voter, set()):
                self.pokes.send_nowait(voter)

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        if (actor, incarnation) == self._start:
            return f"planned crash of {actor} in started()"
        return None


def _weighted(*choices: tuple[int, Any]) -> st.SearchStrategy[Any]:
    """One of ``choices`` (weight, value), drawn as often as its weight says."""
    return st.sampled_from([value for weight, value in choices for _ in range(weight)])


@st.composite
def cases(draw: st.DrawFn) -> Case:
    n = draw(st.integers(2, 8))
    agent_mode = draw(_weighted((5, AgentMode.MULTI), (1, AgentMode.SINGLE)))
    refinement = draw(_weighted((3, True), (1, False)))
    skip_voting = agent_mode is AgentMode.SINGLE and not refinement
    # Without voting nothing converges at zero latency: agents would refine on every update
    # at one instant of virtual time, so those runs get a latency.
    latencies = (0.05, 0.2, 1.0) if skip_voting else (0.0, 0.05, 0.2, 1.0)
    members = [
        agent(
            f"a{i}",
            seed=draw(st.integers(0, 999)),
            latency=draw(st.sampled_from(latencies)),
            jitter=draw(st.sampled_from((0.0, 0.5))),
            answers=draw(st.integers(1, 3)),
            vote=draw(_weighted((4, "best"), (1, "self"), (1, f"agent{draw(st.integers(1, n))}"))),
            error_rate=draw(_weighted((4, 0.0), (1, 0.2))),
            malformed_rate=draw(_weighted((4, 0.0), (1, 0.1))),
            answer_text=draw(_weighted((3, None), (1, SAME))),
        )
        for i in range(1, n + 1)
    ]
    visibility = draw(st.sampled_from(("all", "ring", "islands")))
    if visibility == "islands":
        visibility += f":{draw(st.integers(1, n - 1))}"
    orchestrator: dict[str, Any] = {
        "visibility": visibility,
        "in_flight_policy": draw(st.sampled_from(InFlightPolicy)),
        "final_answer_strategy": draw(st.sampled_from(FinalAnswerStrategy)),
        "quiet_period": draw(_weighted((3, None), (1, 0.1))),
        "defer_voting_until_all_answered": draw(_weighted((3, False), (1, True))),
        "max_new_answers_per_agent": draw(_weighted((3, None), (1, 1), (1, 2))),
        "run_timeout": draw(_weighted((6, None), (1, 0.3), (1, 2.0))),
    }
    cfg = apply_modes(
        config(*members, **orchestrator), ModeState(agent_mode=agent_mode, refinement=refinement)
    )
    actors = 2 + len(cfg.agents)
    actor = st.sampled_from(range(actors))
    after = st.none() | st.integers(1, 20)
    crash = st.builds(Crash, actor=actor, after=after)
    crashes = tuple(draw(st.lists(crash, max_size=4)))
    start_crash = None
    if draw(_weighted((9, False), (1, True))):
        crashed, incarnation = draw(actor), draw(st.integers(1, 2))
        start_crash = (crashed, incarnation)
        if incarnation == 2:  # the first incarnation crashes after a message, then this one
            crashes += (Crash(actor=crashed, after=draw(after)),)
    return Case(
        config=cfg,
        crashes=crashes,
        start_crash=start_crash,
        cancel_at=draw(st.none() | st.floats(0.0, 3.0)),
    )


@attrs.frozen(kw_only=True)
class Ran:
    result: RunResult
    heard: list[Event]
    """Every event, as a tap heard it."""
    logged: list[Event]
    """Every event of the run's log, decoded back as replay reads it."""


async def run_case(case: Case) -> Ran | None:
    """Run ``case`` to its end; ``None`` if it hung."""
    actors = [COORDINATOR, BUS, *(agent_address(a.id) for a in case.config.agents)]
    tap = MemoryTap()
    file = MemoryFile()
    log = JsonlEventLog.writing_to(file, Path("events.jsonl"))
    plan = Plan(case, actors)
    spec = RunSpec(task=TASK, config=case.config, faults=plan)
    result = None
    with trio.move_on_after(HANG_BOUND):
        async with (
            open_run(spec, taps=[tap, log, plan]) as handle,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(_poke, handle.system, plan._poking)
            if case.cancel_at is not None:
                nursery.start_soon(_cancel_at, handle.cancel, case.cancel_at)
            result = await handle.result()
            nursery.cancel_scope.cancel()
    if result is None:
        return None
    assert log.failure is None, log.failure
    stream = EventLogStream("events.jsonl", io.BytesIO(file.data), max_line_bytes=MAX_LINE_BYTES)
    logged = list(stream)
    return Ran(result=result, heard=tap.events, logged=logged)


async def _poke(system: ActorSystem, voters: trio.MemoryReceiveChannel[Address]) -> None:
    async for voter in voters:
        system.tell_nowait(voter, Poke())


async def _cancel_at(cancel: Any, delay: float) -> None:
    await trio.sleep(delay)
    cancel()


def differences(view: RunView, ran: Ran) -> list[str]:
    """Where ``view`` disagrees with the run's result, in words."""
    result = ran.result
    found = []
    if view.votes != result.votes:
        found.append(f"votes {view.votes} but the result has {result.votes}")
    decided = any(isinstance(e, VotingComplete) for e in ran.heard)
    tally = dict(Counter(result.votes.values())) if decided else {}
    if view.tally != tally:
        found.append(f"tally {view.tally} but the result's votes make it {tally}")
    if view.answers != result.answers:
        found.append(f"answers {view.answers} but the result has {result.answers}")
    if view.winner != result.winner:
        found.append(f"winner {view.winner} but the result has {result.winner}")
    return found


def _note(case: Case, ran: Ran) -> None:
    """What the run went through, for ``--hypothesis-show-statistics``."""
    result = ran.result
    event(f"termination: {result.termination.value}")
    event(f"visibility: {case.config.orchestrator.visibility.split(':')[0]}")
    restarts = sum(
        1 for e in ran.heard if isinstance(e, ChildExited) and e.action is SupervisorAction.RESTART
    )
    event(f"actor restarts: {min(restarts, 3)}{'+' if restarts >= 3 else ''}")
    cleared = [e for e in ran.heard if isinstance(e, VotesCleared)]
    event(f"votes cleared: {'some' if cleared else 'none'}")
    excluded = [e for e in ran.heard if isinstance(e, AgentExcluded)]
    if any(e.withdrawn_vote for e in excluded):
        event("exclusions: one withdrew a vote")
    else:
        event(f"exclusions: {'some' if excluded else 'none'}")
    event(f"standing votes: {len(result.votes)}")
    same = [e for e in ran.heard if isinstance(e, VoteAdded) and e.same_answer]
    event(f"votes by giving the same answer: {'some' if same else 'none'}")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases())
def test_a_view_folded_from_a_runs_events_has_the_votes_tally_answers_and_winner_of_its_result(
    case: Case,
) -> None:
    ran = trio.run(run_case, case, clock=trio.testing.MockClock(autojump_threshold=0))

    assert ran is not None, f"the run hung for {HANG_BOUND:g} virtual seconds"
    _note(case, ran)
    heard, replayed = RunView.from_events(ran.heard), RunView.from_events(ran.logged)
    assert differences(heard, ran) == []
    assert replayed == heard
