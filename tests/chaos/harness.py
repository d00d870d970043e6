"""The chaos harness: one random scenario per seed, run to its end, then checked.

A scenario is a random config (1-8 scripted agents, any visibility, refinement on or off,
single or multi agent, either in-flight policy, any final strategy, with or without a quiet
period, deferred voting, an answer cap, a run timeout, flaky backends) and random trouble:
actors crash right after random messages (:class:`ChaosPlan`, through ``RunSpec.faults``),
sometimes one crashes as it starts, a tap raises, the event log's disk fills up.

What must hold whatever happened (:func:`violations`): the run ends (within a bound of
virtual time, and of events, so a run busy forever at one instant is caught too), with
exactly one ``run_ended``; every answer the coordinator accepted is in
the result; there is a final answer whenever some agent answered; the winner is the one the
recorded votes make it (most votes, ties to config order; without votes, the first answer
when coordination decided, the newest when the run was cut short); every vote is for an
answer its voter could see; a ``failed`` run says why and no other run does.

Everything runs on virtual time: call :func:`run_scenario` under an autojump clock.
"""

from __future__ import annotations

import errno
import random
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.coordination.visibility import Visibility
from conclave.actors.run.driver import BUS, COORDINATOR, RunHandle, RunSpec, open_run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import DecidedBy, RunResult, Termination
from conclave.config.modes import AgentMode, ModeState, apply_modes
from conclave.config.schema import ConclaveConfig, FinalAnswerStrategy, InFlightPolicy
from conclave.runtime import (
    Address,
    ChildExited,
    Envelope,
    Event,
    JsonlEventLog,
    MemoryTap,
    SupervisorAction,
    TapFailed,
)
from tests.coordination.helpers import TASK, agent, config

__all__ = [
    "HANG_BOUND",
    "MemoryFile",
    "Outcome",
    "Scenario",
    "Tally",
    "run_scenario",
    "scenario",
    "violations",
]

HANG_BOUND = 24 * 3600.0
"""Virtual seconds after which a run counts as hung (scripted latencies are at most 1 s)."""
EVENT_BOUND = 50_000
"""Events after which a run counts as running away: busy without end at one instant of
virtual time, where :data:`HANG_BOUND` would never be reached."""


@attrs.frozen(kw_only=True)
class Scenario:
    seed: int
    config: ConclaveConfig
    crash_budget: int
    """At most this many crashes after a message."""
    crash_chance: float
    """The chance of a crash after each message an actor handles (while budget lasts)."""
    start_crash: tuple[Address, int] | None
    """An actor incarnation that crashes in ``started()`` (the run then fails by design)."""
    tap_fails_at: int | None
    """The tap raises on this event (0-based), if set."""
    log_fails_after: int | None
    """The event log's writes fail (disk full) after this many, if set."""


def scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    skip_voting = rng.random() < 0.05
    # Without voting nothing converges: agents refine on every update until the slowest has
    # answered. At zero latency that is endless at one instant of virtual time (the scripted
    # backend answers whenever it may), so those runs get a latency.
    latencies = (0.05, 0.2, 1.0) if skip_voting else (0.0, 0.05, 0.2, 1.0)
    members = [
        agent(
            f"a{i}",
            seed=rng.randrange(1_000),
            latency=rng.choice(latencies),
            jitter=rng.choice((0.0, 0.5)),
            answers=rng.randint(1, 3),
            vote=rng.choice(("best", "best", "self", f"agent{rng.randint(1, n)}")),
            error_rate=rng.choice((0.0, 0.0, 0.0, 0.1)),
            malformed_rate=rng.choice((0.0, 0.0, 0.0, 0.1)),
        )
        for i in range(1, n + 1)
    ]
    orchestrator: dict[str, Any] = {
        "visibility": rng.choice(("all", "ring", f"islands:{rng.randint(1, max(1, n - 1))}")),
        "in_flight_policy": rng.choice(list(InFlightPolicy)),
        "final_answer_strategy": rng.choice(list(FinalAnswerStrategy)),
        "quiet_period": rng.choice((None, 0.1, 0.3)),
        "defer_voting_until_all_answered": rng.random() < 0.2,
        "max_new_answers_per_agent": rng.choice((None, None, 1, 2)),
        "disable_injection": rng.random() < 0.1,
        "skip_voting": skip_voting,
        "run_timeout": rng.choice((None, None, None, None, rng.uniform(0.5, 20.0))),
    }
    modes = ModeState(
        agent_mode=AgentMode.SINGLE if rng.random() < 0.15 else AgentMode.MULTI,
        refinement=rng.random() < 0.7,
    )
    cfg = apply_modes(config(*members, **orchestrator), modes)
    actors = [COORDINATOR, BUS, *(agent_address(a.id) for a in cfg.agents)]
    return Scenario(
        seed=seed,
        config=cfg,
        crash_budget=rng.randint(0, 4),
        crash_chance=rng.choice((0.02, 0.05, 0.1)),
        start_crash=(rng.choice(actors), rng.randint(1, 2)) if rng.random() < 0.05 else None,
        tap_fails_at=rng.randint(0, 300) if rng.random() < 0.3 else None,
        log_fails_after=rng.randint(0, 200) if rng.random() < 0.3 else None,
    )


class ChaosPlan:
    """Crashes actors right after random messages, at most ``budget`` times; optionally
    one incarnation in ``started()``."""

    def __init__(self, s: Scenario) -> None:
        self._rng = random.Random(f"crash:{s.seed}")
        self._budget = s.crash_budget
        self._chance = s.crash_chance
        self._start_crash = s.start_crash
        self.crashed: Counter[str] = Counter()

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        if self._budget <= 0 or self._rng.random() >= self._chance:
            return None
        self._budget -= 1
        self.crashed[actor.kind] += 1
        return f"chaos crash of {actor} after {type(envelope.payload).__name__}"

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        if self._start_crash != (actor, incarnation):
            return None
        self.crashed["started"] += 1
        return f"chaos crash of {actor} in started()"


class _Runaway:
    """Cancels the run once it has recorded :data:`EVENT_BOUND` events."""

    def __init__(self) -> None:
        self.events = 0
        self.handle: RunHandle | None = None
        self.tripped = False

    def record(self, event: Event) -> None:
        self.events += 1
        if self.events > EVENT_BOUND and self.handle is not None and not self.tripped:
            self.tripped = True
            self.handle.cancel()


class FlakyTap:
    """A tap (say, a UI) that raises on one event."""

    name = "flaky"

    def __init__(self, fails_at: int) -> None:
        self._left = fails_at

    def record(self, event: Event) -> None:
        self._left -= 1
        if self._left < 0:
            raise RuntimeError("the flaky tap broke")


class MemoryFile:
    """An event log's file, in memory: a spec reads back what the log wrote."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes, /) -> int:
        self.data += data
        return len(data)

    def truncate(self, size: int, /) -> int:
        del self.data[size:]
        return size

    def close(self) -> None:
        return None


class FullDisk(MemoryFile):
    """A log file whose writes fail with ENOSPC after ``writes`` successful ones."""

    def __init__(self, writes: int) -> None:
        super().__init__()
        self._left = writes

    def write(self, data: bytes, /) -> int:
        if self._left <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._left -= 1
        return super().write(data)


@attrs.frozen(kw_only=True)
class Outcome:
    scenario: Scenario
    result: RunResult | None
    """``None``: the run hung."""
    events: list[Event]
    crashes: Counter[str]
    tap_failed: bool
    log_failed: bool
    ran_away: bool


async def run_scenario(s: Scenario) -> Outcome:
    tap = MemoryTap()
    plan = ChaosPlan(s)
    runaway = _Runaway()
    taps: list[Any] = [tap, runaway]
    if s.tap_fails_at is not None:
        taps.append(FlakyTap(s.tap_fails_at))
    log = None
    if s.log_fails_after is not None:
        log = JsonlEventLog.writing_to(FullDisk(s.log_fails_after), Path("chaos.jsonl"))
        taps.append(log)
    result = None
    with trio.move_on_after(HANG_BOUND):
        async with open_run(RunSpec(task=TASK, config=s.config, faults=plan), taps=taps) as h:
            runaway.handle = h
            result = await h.result()
    return Outcome(
        scenario=s,
        result=result,
        events=tap.events,
        crashes=plan.crashed,
        tap_failed=any(isinstance(e, TapFailed) for e in tap.events),
        log_failed=log is not None and log.failure is not None,
        ran_away=runaway.tripped,
    )


def violations(outcome: Outcome) -> list[str]:
    """What went wrong, in words; empty if the run kept every promise."""
    result = outcome.result
    if result is None:
        return [f"hung: no result within {HANG_BOUND:g} virtual seconds"]
    found: list[str] = []
    if outcome.ran_away:
        found.append(f"ran away: more than {EVENT_BOUND} events, cancelled")
    events = outcome.events
    ended = [e for e in events if isinstance(e, RunEnded)]
    if len(ended) != 1:
        found.append(f"{len(ended)} run_ended events")
    elif events[-1] is not ended[0]:
        found.append(f"{type(events[-1]).__name__} recorded after run_ended")
    accepted = [e.label for e in events if isinstance(e, AnswerAdded)]
    if accepted != [a.label for a in result.answers]:
        found.append(f"answers accepted {accepted} but the result has {result.answers}")
    if result.answers and result.final_answer is None:
        found.append("agents answered but there is no final answer")
    if (result.termination is Termination.FAILED) != (result.failure_reason is not None):
        found.append(f"termination {result.termination} with failure {result.failure_reason!r}")
    found += _winner_violations(outcome.scenario.config, result)
    return found


def _winner_violations(cfg: ConclaveConfig, result: RunResult) -> list[str]:
    if result.final_answer is None:
        return [] if result.winner is None else [f"winner {result.winner} without an answer"]
    order = [a.id for a in cfg.agents]
    author = {a.label: a.agent for a in result.answers}
    visibility = Visibility(
        cfg.orchestrator.visibility, order, isolated=cfg.orchestrator.disable_injection
    )
    found = [
        f"{voter} voted for {label}, an answer it was never shown"
        for voter, label in result.votes.items()
        if not visibility.sees(voter, author[label])
    ]
    tally = Counter(author[label] for label in result.votes.values())
    if tally:
        top = max(tally.values())
        expected = next(a for a in order if tally[a] == top)
    elif result.decided_by is DecidedBy.NO_VOTES:
        expected = result.answers[0].agent
    else:
        expected = result.answers[-1].agent  # cut short before any vote: the newest answer
    if result.winner != expected:
        found.append(f"winner {result.winner}, but the votes {dict(tally)} make it {expected}")
    return found


@attrs.define
class Tally:
    """Counts over many outcomes, for the long run's report."""

    runs: int = 0
    terminations: Counter[str] = attrs.Factory(Counter)
    failure_kinds: Counter[str] = attrs.Factory(Counter)
    """Failed runs by what their ``failure_reason`` starts with."""
    decided_by: Counter[str] = attrs.Factory(Counter)
    crashes: Counter[str] = attrs.Factory(Counter)
    restarts: int = 0
    tap_failures: int = 0
    log_failures: int = 0
    excluded_agents: int = 0
    failures: list[tuple[int, list[str]]] = attrs.Factory(list)

    def add(self, outcome: Outcome) -> list[str]:
        self.runs += 1
        found = violations(outcome)
        if found:
            self.failures.append((outcome.scenario.seed, found))
        self.crashes.update(outcome.crashes)
        self.tap_failures += outcome.tap_failed
        self.log_failures += outcome.log_failed
        self.restarts += sum(
            1
            for e in outcome.events
            if isinstance(e, ChildExited) and e.action is SupervisorAction.RESTART
        )
        result = outcome.result
        if result is None:
            self.terminations["hung"] += 1
        else:
            self.terminations[result.termination.value] += 1
            self.decided_by[result.decided_by.value if result.decided_by else "none"] += 1
            self.excluded_agents += len(result.failed_agents)
            if result.failure_reason is not None:
                self.failure_kinds[result.failure_reason.split(":")[0].split(" (")[0]] += 1
        return found

    def report(self) -> str:
        lines = [
            f"runs: {self.runs}",
            f"terminations: {dict(sorted(self.terminations.items()))}",
            f"failed, why: {dict(self.failure_kinds.most_common())}",
            f"decided by: {dict(sorted(self.decided_by.items()))}",
            f"crashes injected: {sum(self.crashes.values())} {dict(sorted(self.crashes.items()))}",
            f"actor restarts: {self.restarts}",
            f"agents excluded: {self.excluded_agents}",
            f"taps that raised: {self.tap_failures}",
            f"event logs whose disk filled: {self.log_failures}",
            f"runs that broke a promise: {len(self.failures)}",
        ]
        lines += [f"  seed {seed}: {'; '.join(found)}" for seed, found in self.failures[:20]]
        return "\n".join(lines)
