"""Running one coordinated task: ``run(spec)`` or ``async with open_run(spec) as handle``.

The run supervisor starts the Coordinator, the InjectionBus and one AgentActor per agent
(under their own supervisor), wires the mode rules, and waits for the coordinator's result.
Stop order is the reverse of start order: agents first, so a submission in flight still
finds its coordinator; then the bus; the coordinator last.

A run never raises what goes wrong inside it. If its supervisor gives up (too many
restarts, an actor that cannot start) or anything unexpected escapes while waiting for the
result, the run ends ``failed`` with a ``failure_reason`` and the best answer so far.

``run_ended`` is the last event of a run, in its log and for every tap: right after
recording it the run closes its log and stops passing events to its taps, so the shutdown
that follows (actors stopping, mail dead-lettered) is neither written nor heard.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import trio

from actors.agent.actor import AgentActor, AgentMemory, AgentSetup
from actors.coordination.bus import AnswersArriving, BusState, InjectionBus, agent_address
from actors.coordination.coordinator import Coordinator, CoordinatorSetup
from actors.coordination.protocol import (
    AnswerVerdict,
    AwaitResult,
    Continue,
    OverrideDecision,
    StopWork,
)
from actors.coordination.rules import (
    AnswerProgress,
    DeferVoting,
    DropInjection,
    HoldUntilQuiet,
    UpdatesAfterFirstAnswer,
)
from actors.coordination.state import CoordinationState, Phase
from actors.coordination.visibility import Visibility
from actors.llm.protocol import LLMBackend
from actors.llm.scripted import ScriptedBackend
from actors.run.events import RunEnded
from actors.run.faults import FaultPlan, with_faults
from actors.run.result import DecidedBy, RunResult, RunStats, Termination
from config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from runtime import (
    ActorContext,
    ActorSystem,
    Address,
    Event,
    EventTap,
    JsonlEventLog,
    LogOpened,
    MailboxSpec,
    Restart,
    StopSignal,
    Supervisor,
    SupervisorSpec,
    Undeliverable,
    open_actor_system,
)

__all__ = ["BUS", "COORDINATOR", "RunHandle", "RunSpec", "build_backend", "open_run", "run"]

COORDINATOR = Address("coordinator")
BUS = Address("bus")
_UNBOUNDED = MailboxSpec(capacity=math.inf)
"""Protocol traffic is bounded by the protocol (O(agents) per answer); an unbounded mailbox
means a busy coordinator can never deadlock against an agent waiting on it."""
_RUN_SUPERVISOR = SupervisorSpec(intensity=3, period=5.0)
"""Coordinator, bus and the agents' supervisor: more restarts than this and the run fails."""


def build_backend(agent: AgentConfig) -> LLMBackend:
    policy = agent.backend
    if not isinstance(policy, ScriptedBackendConfig):
        raise TypeError(f"agent {agent.id!r}: a {policy.type} backend comes from the backend pool")
    return ScriptedBackend(
        agent_id=agent.id, persona=agent.persona, policy=policy, seed=policy.seed
    )


@attrs.frozen(kw_only=True)
class RunSpec:
    task: str
    config: ConclaveConfig
    """The config after mode overrides (see :func:`config.modes.apply_modes`)."""
    log_dir: Path | None = None
    override_window: bool = False
    backend_factory: Callable[[AgentConfig], LLMBackend] = build_backend
    faults: FaultPlan | None = None
    """Crash actors at chosen moments (tests, the chaos harness); see :mod:`actors.run.faults`."""


class RunHandle:
    """A run in progress: wait for its result, cancel it, or decide its override window."""

    def __init__(
        self,
        system: ActorSystem,
        state: CoordinationState,
        stats: RunStats,
        spec: RunSpec,
        memories: dict[str, AgentMemory],
        event_log: JsonlEventLog | None,
        taps: list[_TapUntilEnd],
    ) -> None:
        self.system = system
        self._memories = memories
        self.state = state
        self.stats = stats
        self.spec = spec
        self.event_log = event_log
        """The run's log, if it has one: its ``failure`` says whether logging stopped early."""
        self._taps = taps
        self._started = time.monotonic()
        self._cancel = trio.CancelScope()
        self._waiting = trio.CancelScope()
        self._failure: str | None = None
        self._result: RunResult | None = None

    def cancel(self) -> None:
        """End the run now; :meth:`result` returns what exists with ``termination="cancelled"``."""
        self._cancel.cancel()

    def fail(self, reason: str) -> None:
        """End the run now as ``failed`` because of ``reason`` (the first reason stands)."""
        if self._failure is None:
            self._failure = reason
        self._waiting.cancel()

    async def override(self, presenter: str) -> AnswerVerdict:
        verdict = await self.system.ask(COORDINATOR, OverrideDecision(presenter=presenter))
        assert isinstance(verdict, AnswerVerdict)
        return verdict

    async def continue_(self) -> AnswerVerdict:
        verdict = await self.system.ask(COORDINATOR, Continue())
        assert isinstance(verdict, AnswerVerdict)
        return verdict

    async def result(self) -> RunResult:
        """Wait for the run to end (completed, timed out, cancelled or failed); never raises
        what went wrong inside the run. The second call returns the same result."""
        if self._result is not None:
            return self._result
        timeout = self.spec.config.orchestrator.run_timeout
        with (
            trio.move_on_after(math.inf if timeout is None else timeout) as timer,
            self._cancel,
            self._waiting,
        ):
            try:
                await self._await_coordinator()
            except Exception as exc:
                self.fail(f"waiting for the result failed: {type(exc).__name__}: {exc}")
        failure = self._failure
        if failure is not None:
            termination = Termination.FAILED
        elif self._cancel.cancelled_caught:
            termination = Termination.CANCELLED
        elif timer.cancelled_caught:
            termination = Termination.TIMEOUT
        elif self.state.final_answer is None:
            termination = Termination.FAILED
            failure = self.state.failure_reason or "coordination ended without an answer"
        else:
            termination = Termination.COMPLETED
        if termination is not Termination.COMPLETED:
            self._halt()
        self._result = self.snapshot(termination, failure_reason=failure)
        self._end(self._result)
        return self._result

    async def _await_coordinator(self) -> None:
        while True:
            try:
                await self.system.ask(COORDINATOR, AwaitResult())
                return
            except Undeliverable:
                # The coordinator's incarnation ended on the request: ask the next one. If the
                # coordinator is gone for good, the run supervisor gave up: fail() says why.
                if not self.system.is_registered(COORDINATOR):
                    await trio.sleep_forever()

    def _end(self, result: RunResult) -> None:
        """Record ``run_ended``, the last event any tap hears; then close the log."""
        for tap in self._taps:
            tap.until_run_ended()
        self.system.record(
            RunEnded(
                at=trio.current_time(),
                termination=result.termination.value,
                winner=result.winner,
                final_answer=result.final_answer,
                decided_by=result.decided_by.value if result.decided_by else None,
                failure_reason=result.failure_reason,
            )
        )
        if self.event_log is not None:
            self.event_log.close()

    def _abandoned(self) -> None:
        """The caller left the run (Ctrl+C, an error of its own): it ends ``cancelled``."""
        if self._result is None:
            self._result = self.snapshot(Termination.CANCELLED)
            self._halt()
            self._end(self._result)

    def _halt(self) -> None:
        """End coordination now: no more answers or votes are accepted, and every agent is
        told to cancel its round. Without this, a thousand agents would keep answering (and
        the bus fanning out) while the shutdown stops them one by one."""
        self.state.phase = Phase.DONE
        for memory in self._memories.values():
            memory.halted = True  # mail already queued must not start rounds either
        for agent in self.state.live:
            address = agent_address(agent)
            if self.system.is_registered(address):
                self.system.tell_nowait(address, StopWork())

    def snapshot(
        self, termination: Termination | str, *, failure_reason: str | None = None
    ) -> RunResult:
        """The result as of now: on timeout or cancel, the best answer so far."""
        termination = Termination(termination)
        state = self.state
        final = state.final_answer
        winner = state.winner.agent if state.winner else None
        decided_by = _decided_by(state)
        if final is None:
            best = state.best_so_far()
            if best is not None:
                final, winner = best.content, best.agent
                decided_by = _BEST_SO_FAR[termination]
        stats = self.stats
        return RunResult(
            final_answer=final,
            winner=winner,
            presenter=state.presenter if state.final_answer is not None else None,
            strategy=state.orchestrator.final_answer_strategy.value,
            answers=list(state.answers),
            votes={voter: answer.label for voter, answer in state.votes.items()},
            rounds=stats.rounds,
            llm_calls=stats.llm_calls,
            restarts=stats.restarts,
            termination=termination,
            failed_agents={a: r for a, r in state.failed.items()},
            log_dir=str(self.spec.log_dir) if self.spec.log_dir else None,
            duration_s=round(time.monotonic() - self._started, 3),
            llm_completed=stats.llm_completed,
            input_tokens=stats.input_tokens,
            output_tokens=stats.output_tokens,
            messages_routed=self.system.statistics().routed,
            dead_letters=stats.dead_letters,
            presentation_error=state.presentation_error,
            decided_by=decided_by,
            failure_reason=failure_reason if termination is Termination.FAILED else None,
        )


_BEST_SO_FAR = {
    Termination.TIMEOUT: DecidedBy.TIMEOUT_BEST_SO_FAR,
    Termination.CANCELLED: DecidedBy.CANCELLED_BEST_SO_FAR,
    Termination.FAILED: DecidedBy.FAILED_BEST_SO_FAR,
}
"""How a final answer taken from the answers so far (coordination never decided) is named."""


def _decided_by(state: CoordinationState) -> DecidedBy | None:
    """How coordination chose its final answer; ``None`` if it never produced one."""
    if state.final_answer is None:
        return None
    if state.overridden:
        return DecidedBy.OVERRIDE
    if state.winner is not None and state.winner.tally:
        return DecidedBy.VOTES
    return DecidedBy.NO_VOTES


@asynccontextmanager
async def open_run(spec: RunSpec, *, taps: Iterable[EventTap] = ()) -> AsyncIterator[RunHandle]:
    """Start a run; leaving the block ends it (``cancelled`` if no result was taken).

    Raises only before the run starts: if its event log cannot be created (the directory
    already holds a run's log: :class:`~runtime.eventlog.EventLogExists`, or an ``OSError``).
    An exception raised by the block itself propagates unchanged.
    """
    config = spec.config
    orchestrator = config.orchestrator
    agent_ids = [a.id for a in config.agents]
    state = CoordinationState(task=spec.task, agents=agent_ids, orchestrator=orchestrator)
    stats = RunStats()
    log = JsonlEventLog(spec.log_dir / "events.jsonl") if spec.log_dir is not None else None
    gated = [_TapUntilEnd(t) for t in (stats, *taps, *([log] if log is not None else []))]
    try:
        async with open_actor_system(name="run", taps=gated) as system:
            if log is not None:
                system.record(
                    LogOpened(at=trio.current_time(), wall_time=time.time(), pid=os.getpid())
                )
            memories: dict[str, AgentMemory] = {}
            handle = RunHandle(system, state, stats, spec, memories, log, gated)
            run_supervisor = _start_run_supervisor(system, handle)
            _wire_rules(system, spec, run_supervisor, state, memories)
            try:
                yield handle
            except BaseException:
                handle._abandoned()
                raise
            if handle._result is None:
                handle.cancel()
                await handle.result()
    finally:
        if log is not None:
            log.close()


class _TapUntilEnd:
    """Passes events to a tap until the run ends. Free per event while the run lasts:
    until :meth:`until_run_ended`, ``record`` *is* the tap's own bound method."""

    def __init__(self, tap: EventTap) -> None:
        self.record: Callable[[Event], None] = tap.record
        name = getattr(tap, "name", None)
        self.name = name if isinstance(name, str) else type(tap).__name__
        """What a :class:`~runtime.TapFailed` calls the tap if it raises."""

    def until_run_ended(self) -> None:
        """Pass events on up to ``run_ended``, then nothing. Events other taps record while
        hearing ``run_ended`` (say, ``TapFailed`` when one raises on it) come after it, so
        this tap must not hear them either."""
        hear = self.record

        def record(event: Event) -> None:
            if type(event) is RunEnded:
                self.record = _ignore  # first: this tap hears nothing after it, even if it raises
            hear(event)

        self.record = record


def _ignore(event: Event) -> None:
    return None


def _start_run_supervisor(system: ActorSystem, handle: RunHandle) -> Supervisor:
    """The supervisor of the run's actors, under the root. When it gives up, the run fails
    (``handle.fail``) instead of the failure escalating out of the actor system."""
    supervisor, child = system.supervisor_child("run", _RUN_SUPERVISOR, restart=Restart.TEMPORARY)

    async def supervise(stop: StopSignal, incarnation: int) -> None:
        try:
            await child.run(stop, incarnation)
        except Exception as exc:
            cause = _lone(exc)
            handle.fail(f"{type(cause).__name__}: {cause}")

    system.root.start_child(attrs.evolve(child, run=supervise))
    return supervisor


def _lone(exc: Exception) -> Exception:
    """The error itself, not the nursery's group around it: the reason names what broke."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _wire_rules(
    system: ActorSystem,
    spec: RunSpec,
    supervisor: Supervisor,
    state: CoordinationState,
    memories: dict[str, AgentMemory],
) -> None:
    """Routing rules for the modes, then the actors (coordinator, bus, agents)."""
    orchestrator = spec.config.orchestrator
    system.add_observer(AnswerProgress())
    # Drops first: an update that will be dropped should not be held on the way.
    if orchestrator.disable_injection:
        system.add_rule(DropInjection())
    system.add_rule(UpdatesAfterFirstAnswer())
    if orchestrator.defer_voting_until_all_answered:
        system.add_rule(DeferVoting())
    quiet_period = orchestrator.quiet_period
    if orchestrator.defer_voting_until_all_answered and orchestrator.max_new_answers_per_agent == 1:
        # Voting opens only once every agent has its one answer: no burst can follow, so
        # a quiet period would only add its latency.
        quiet_period = None
    bus_state = BusState()
    if quiet_period is not None:
        system.add_observer(AnswersArriving(bus_state, quiet_period))
        system.add_rule(HoldUntilQuiet())

    faults = spec.faults
    setup = CoordinatorSetup(bus=BUS, override_window=spec.override_window)
    system.spawn(
        COORDINATOR,
        with_faults(lambda ctx: Coordinator(ctx, state=state, setup=setup), faults),
        mailbox=_UNBOUNDED,
        supervisor=supervisor,
    )
    visibility = Visibility(orchestrator.visibility, state.agents)
    system.spawn(
        BUS,
        with_faults(
            lambda ctx: InjectionBus(
                ctx,
                visibility=visibility,
                preview_chars=orchestrator.answer_preview_chars,
                state=bus_state,
            ),
            faults,
        ),
        mailbox=_UNBOUNDED,
        supervisor=supervisor,
    )
    agents_supervisor, child = system.supervisor_child(
        "agents", SupervisorSpec(intensity=max(3, len(state.agents)), period=60.0)
    )
    supervisor.start_child(child)
    for agent in spec.config.agents:
        memories[agent.id] = _spawn_agent(system, spec, agent, state, agents_supervisor)


def _spawn_agent(
    system: ActorSystem,
    spec: RunSpec,
    agent: AgentConfig,
    state: CoordinationState,
    supervisor: Supervisor,
) -> AgentMemory:
    setup = AgentSetup(
        agent=agent.id,
        anonymous_id=state.anonymous[agent.id],
        agents=len(state.agents),
        persona=agent.persona,
        coordinator=COORDINATOR,
        orchestrator=spec.config.orchestrator,
    )
    backend = spec.backend_factory(agent)
    memory = AgentMemory()

    def factory(ctx: ActorContext) -> AgentActor:
        return AgentActor(ctx, setup=setup, backend=backend, memory=memory)

    system.spawn(
        agent_address(agent.id),
        with_faults(factory, spec.faults),
        restart=Restart.TRANSIENT,
        mailbox=_UNBOUNDED,
        supervisor=supervisor,
    )
    return memory


async def run(spec: RunSpec, *, taps: Iterable[EventTap] = ()) -> RunResult:
    """Run to the end. Never raises for what happens in the run: a run that cannot even
    start (its log cannot be created) is a ``failed`` result that says why."""
    try:
        async with open_run(spec, taps=taps) as handle:
            return await handle.result()
    except Exception as exc:
        return _not_started(spec, exc)


def _not_started(spec: RunSpec, exc: Exception) -> RunResult:
    return RunResult(
        final_answer=None,
        winner=None,
        presenter=None,
        strategy=spec.config.orchestrator.final_answer_strategy.value,
        answers=[],
        votes={},
        rounds=0,
        llm_calls=0,
        restarts=0,
        termination=Termination.FAILED,
        failed_agents={},
        log_dir=str(spec.log_dir) if spec.log_dir else None,
        duration_s=0.0,
        failure_reason=f"the run could not start: {type(exc).__name__}: {exc}",
    )
