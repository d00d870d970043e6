"""Running one coordinated task: ``drive(spec, hub)``, ``run(spec)``, or
``async with open_run(spec) as handle``.

``open_run`` owns the run's whole lifetime: its backend pool (unless handed one that outlives
it), its services (workspaces, sandboxes: :mod:`actors.run.services`, closed after the
actors stop), its actor system, its log and its clock. The run's timeout counts from the
start and pauses while a person decides. The run supervisor starts the WriteTracker (when a
context path is writable), the Coordinator, the InjectionBus and one AgentActor per agent
(under their own supervisor); stop order is the reverse of start order: agents first, so a
submission in flight still finds its coordinator; then the bus; the coordinator; the
tracker last, so the coordinator's last asks still find it.

Spawning yields every few hundred agents, so a run of 20,000 agents can be cancelled while it
is being set up; nothing starts until every actor is spawned, so the coordinator's first
message finds every agent.

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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import attrs
import trio

from conclave.actors.agent.actor import AgentActor, AgentMemory, AgentSetup
from conclave.actors.agent.resume import ResumePoint
from conclave.actors.agent.transcript_log import TRANSCRIPTS, TranscriptFile
from conclave.actors.coordination.bus import AnswersArriving, BusState, InjectionBus, agent_address
from conclave.actors.coordination.coordinator import Coordinator, CoordinatorSetup
from conclave.actors.coordination.restore import restored_state
from conclave.actors.coordination.rules import (
    AnswerProgress,
    DeferVoting,
    DropInjection,
    FirstVoteWaitsForAnswers,
    HoldUntilQuiet,
    UpdatesAfterFirstAnswer,
)
from conclave.actors.coordination.state import CoordinationState
from conclave.actors.coordination.visibility import Visibility
from conclave.actors.events.hub import EventHub
from conclave.actors.human.desk import QuestionDesk
from conclave.actors.llm.pool import BackendPool, open_backends
from conclave.actors.llm.protocol import CallPurpose, LLMBackend
from conclave.actors.llm.redaction import Redactor
from conclave.actors.paor.corrections import Corrections
from conclave.actors.planning.flow import read_execution_task
from conclave.actors.run.clock import RunClock
from conclave.actors.run.events import RunEnded, RunResumed
from conclave.actors.run.faults import with_faults
from conclave.actors.run.handle import COORDINATOR, RunHandle
from conclave.actors.run.redaction import redacting_backend, secrets_of_run
from conclave.actors.run.result import RunResult, RunStats, Termination
from conclave.actors.run.services import AgentTooling, RunServices, open_services
from conclave.actors.run.spec import RunSpec, build_backend
from conclave.actors.run.usage import UsageTap
from conclave.actors.workspace.tracker import TRACKER, WriteTracker
from conclave.config.schema import AgentConfig
from conclave.runtime import (
    ActorContext,
    ActorSystem,
    Address,
    ChildSpec,
    Event,
    EventTap,
    Flushing,
    JsonlEventLog,
    LogOpened,
    MailboxSpec,
    Restart,
    StopOrder,
    StopSignal,
    Supervisor,
    SupervisorSpec,
    hears_deliveries,
    open_actor_system,
)
from conclave.runtime.eventlog import EventLogFailure
from conclave.runtime.events import EVENT_LOG_FORMAT
from conclave.runtime.gc_tuning import gc_sized_for_agents

__all__ = [
    "BUS",
    "COORDINATOR",
    "SPAWNS_PER_CHECKPOINT",
    "LogFailureCallback",
    "RunHandle",
    "RunSpec",
    "build_backend",
    "drive",
    "not_started",
    "open_run",
    "run",
]

BUS = Address("bus")
_UNBOUNDED = MailboxSpec(capacity=math.inf)
"""Protocol traffic is bounded by the protocol (O(agents) per answer); an unbounded mailbox
means a busy coordinator can never deadlock against an agent waiting on it."""
_RUN_SUPERVISOR = SupervisorSpec(intensity=3, period=5.0)
"""Coordinator, bus and the agents' supervisor: more restarts than this and the run fails."""
SPAWNS_PER_CHECKPOINT = 500
"""Agents spawned between two yields to trio: a cancel (Ctrl+C) waits for at most this many
(tens of milliseconds: 56 ms on a loaded 2-core machine), and a yield costs microseconds."""

LogFailureCallback = Callable[[EventLogFailure], None]


async def drive(
    spec: RunSpec,
    hub: EventHub | None = None,
    *,
    on_open: Callable[[RunHandle], object] | None = None,
    on_log_failure: LogFailureCallback | None = None,
) -> RunResult:
    """Run ``spec`` to its end: the headless driver every front end shares (``conclave
    run`` wraps it with signal handling; the REPL, batch and Ray call it as it is).

    ``hub`` hears every event of the run (plain deliveries only while a subscriber asks for
    them) and records its own events into it (bound before anything is spawned, unbound
    when the run ends). ``on_open`` is given the :class:`RunHandle` as soon as the run
    exists, before its actors are spawned, so a caller can cancel it at any moment.
    ``on_log_failure`` is told, once, if the event log stops (a full disk); the run goes on.

    Raises only what :func:`open_run` raises before the run starts (its log cannot be
    created). Cancelling the caller ends the run ``cancelled`` and propagates.
    """
    async with open_run(spec, hub=hub, on_log_failure=on_log_failure) as handle:
        if on_open is not None:
            on_open(handle)
        return await handle.result()


async def run(
    spec: RunSpec,
    *,
    taps: Iterable[EventTap] = (),
    on_log_failure: LogFailureCallback | None = None,
    on_result: Callable[[RunResult], object] | None = None,
) -> RunResult:
    """Run to the end. Never raises for what happens in the run: a run that cannot even
    start (its log cannot be created) is a ``failed`` result that says why.
    ``on_log_failure``: see :func:`drive`. ``on_result`` is told the result as soon as the
    run has it, before its actors have stopped (which takes a run of a busy batch tens of
    milliseconds): a batch starts its next run then. What ``run`` returns is that result,
    once they have stopped (unless stopping them failed: then a ``failed`` one saying why)."""
    try:
        async with open_run(spec, taps=taps, on_log_failure=on_log_failure) as handle:
            result = await handle.result()
            if on_result is not None:
                on_result(result)
            return result
    except Exception as exc:
        return not_started(spec, reason=f"the run could not start: {type(exc).__name__}: {exc}")


@asynccontextmanager
async def open_run(
    spec: RunSpec,
    *,
    taps: Iterable[EventTap] = (),
    hub: EventHub | None = None,
    on_log_failure: LogFailureCallback | None = None,
) -> AsyncIterator[RunHandle]:
    """Start a run; leaving the block ends it (``cancelled`` if it had not ended).

    The handle is yielded once the coordinator and the bus are spawned; the agents are
    spawned in the background, and then every actor starts. ``taps`` and
    ``hub`` hear every event up to ``run_ended`` (plain deliveries only if they ask:
    :func:`~runtime.eventlog.hears_deliveries`); ``hub`` is also bound to the run, so its
    own events are recorded. ``on_log_failure``: see :func:`drive`.

    Raises only before the run starts: if its event log cannot be created (the directory
    already holds a run's log: :class:`~runtime.eventlog.EventLogExists`, or an ``OSError``).
    What fails as the actors start (the working directory cannot be made, no docker
    engine) fails the run, saying why. An exception raised by the block itself propagates
    unchanged.
    """
    # A big run keeps its agents' state alive: the collector is sized for it while it is
    # open (runtime/gc_tuning.py), if the process's entry point chose that.
    with gc_sized_for_agents(len(spec.config.agents)):
        async with _open_run(spec, taps=taps, hub=hub, on_log_failure=on_log_failure) as handle:
            yield handle


@asynccontextmanager
async def _open_run(
    spec: RunSpec,
    *,
    taps: Iterable[EventTap] = (),
    hub: EventHub | None = None,
    on_log_failure: LogFailureCallback | None = None,
) -> AsyncIterator[RunHandle]:
    """:func:`open_run` itself, once the collector is sized for the run."""
    config = spec.config
    state = _coordination(spec)
    stats = RunStats()
    usage = UsageTap(config.agents, budget_usd=spec.max_cost_usd)
    secrets, redactor = secrets_of_run(config)
    log = (
        # Written while the run waits, not as events happen: encoding and writing each event
        # at once cost a run of thousands of agents a third of its CPU (issue 24).
        JsonlEventLog(
            spec.log_dir / "events.jsonl",
            on_failure=on_log_failure,
            flushing=Flushing.WHEN_IDLE,
            deliveries=spec.log_deliveries,
        )
        if spec.log_dir is not None
        else None
    )
    # One for the run's agents (a long text any of them writes is written once), written
    # while the run waits, as its event log is.
    transcript = (
        TranscriptFile(spec.log_dir / TRANSCRIPTS, flushing=Flushing.WHEN_IDLE)
        if spec.log_dir is not None
        else None
    )
    listeners: list[EventTap] = [stats, usage, *taps]
    listeners += [hub] if hub is not None else []
    listeners += [log] if log is not None else []
    gated = [_TapUntilEnd(t) for t in listeners]
    memories: dict[str, AgentMemory] = {}
    try:
        async with (
            _backend_pool(spec) as pool,
            open_services(spec, secrets=secrets, redactor=redactor) as services,
            open_actor_system(name="run", taps=gated) as system,
        ):
            if hub is not None:
                hub.bind(system.record, on_hearing_changed=system.refresh_taps)
                system.refresh_taps()  # a subscriber may have come or gone since it started
            if log is not None:
                system.record(
                    LogOpened(
                        at=trio.current_time(),
                        wall_time=time.time(),
                        pid=os.getpid(),
                        format=EVENT_LOG_FORMAT,
                    )
                )
            if spec.resume is not None and spec.resume.workdir is not None:
                system.record(_resumed(spec, spec.resume.workdir))
            handle = RunHandle(
                system=system,
                spec=spec,
                state=state,
                stats=stats,
                usage=usage,
                clock=RunClock(config.orchestrator.run_timeout),
                log=log,
                taps=gated,
                services=services,
            )
            usage.on_budget_reached = handle.budget_reached
            services.clock = handle.clock  # paused while a person approves a tool call
            agents_supervisor, run_child = _prepare(system, spec, handle, state, services)
            backends = _backends(spec, pool, redactor)
            start = partial(
                _start,
                system,
                spec,
                state,
                memories,
                handle.halted,
                handle.corrections,
                _desk(spec, handle),
                backends,
                services,
                agents_supervisor,
                run_child,
                transcript,
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(handle._live, start)
                yield handle  # an exception here cancels the run's task, which concludes it
                if handle.outcome is None:
                    handle.cancel()
                await handle.result()
    finally:
        # The handle holds the usage tap: kept, this back-reference would leave the pair,
        # and the run's state they reach, in a reference cycle for the collector.
        usage.on_budget_reached = None
        if hub is not None:
            hub.unbind()  # a hub kept for the next run must not keep this one's system
        if log is not None:
            log.close()
        if transcript is not None:
            transcript.close()
        # Every agent has stopped: their transcripts take no more lines, and a batch keeps
        # the descriptors of live agents' files only (see actors/agent/transcript_log.py).
        for memory in memories.values():
            if memory.transcript_log is not None:
                memory.transcript_log.close()


@asynccontextmanager
async def _backend_pool(spec: RunSpec) -> AsyncIterator[BackendPool]:
    """The pool the spec hands the run, or one of the run's own for its lifetime."""
    if spec.backends is not None:
        yield spec.backends
        return
    async with open_backends() as pool:
        yield pool


class _TapUntilEnd:
    """Passes events to a tap until the run ends. Free per event while the run lasts:
    until :meth:`until_run_ended`, ``record`` *is* the tap's own bound method."""

    def __init__(self, tap: EventTap) -> None:
        self.record: Callable[[Event], None] = tap.record
        name = getattr(tap, "name", None)
        self.name = name if isinstance(name, str) else type(tap).__name__
        """What a :class:`~runtime.TapFailed` calls the tap if it raises."""
        self._tap = tap

    @property
    def hears_deliveries(self) -> bool:
        """The tap's own answer, asked each time: a hub's changes with its subscribers."""
        return hears_deliveries(self._tap)

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


def _prepare(
    system: ActorSystem,
    spec: RunSpec,
    handle: RunHandle,
    state: CoordinationState,
    services: RunServices,
) -> tuple[Supervisor, ChildSpec]:
    """The run supervisor with the rules, the tracker, the coordinator, the bus and the
    agents' supervisor in it, spawned but not started: the run's actors are addressable from
    the moment ``open_run`` yields. Returns the agents' supervisor, and the run supervisor's
    child spec for :func:`_start` to start once every agent is spawned."""
    supervisor, child = system.supervisor_child("run", _RUN_SUPERVISOR, restart=Restart.TEMPORARY)
    _wire_rules(system, spec, supervisor, state, handle.clock, services)
    agents_supervisor, agents_child = system.supervisor_child(
        "agents",
        # Agents are peers: none relies on another to stop after it.
        SupervisorSpec(
            intensity=max(3, len(state.agents)), period=60.0, stop_order=StopOrder.ALL_AT_ONCE
        ),
    )
    supervisor.start_child(agents_child)

    async def supervise(stop: StopSignal, incarnation: int) -> None:
        # When the run supervisor gives up, the run fails instead of the failure
        # escalating out of the actor system.
        try:
            await child.run(stop, incarnation)
        except Exception as exc:
            cause = _lone(exc)
            handle.fail(f"{type(cause).__name__}: {cause}")

    return agents_supervisor, attrs.evolve(child, run=supervise)


async def _start(
    system: ActorSystem,
    spec: RunSpec,
    state: CoordinationState,
    memories: dict[str, AgentMemory],
    halted: trio.Event,
    corrections: Corrections,
    desk: QuestionDesk | None,
    backends: Callable[[AgentConfig], Awaitable[LLMBackend]],
    services: RunServices,
    agents_supervisor: Supervisor,
    run_child: ChildSpec,
    transcript: TranscriptFile | None,
) -> None:
    """Spawn the agents, each with its tools (its sandbox opened here), then start every
    actor of the run at once, so the coordinator's first message finds every agent.
    Cancellation (the run cancelled while 20,000 agents are spawned) takes effect within
    :data:`SPAWNS_PER_CHECKPOINT` agents; nothing spawned starts."""
    await services.start(system)
    for spawned, agent in enumerate(spec.config.agents, start=1):
        backend = await backends(agent)
        tooling = await services.agent_tools(agent.id)
        memories[agent.id] = _spawn_agent(
            system,
            spec,
            agent,
            state,
            backend,
            tooling,
            halted,
            corrections,
            agents_supervisor,
            transcript,
            desk,
        )
        if spawned % SPAWNS_PER_CHECKPOINT == 0:
            await trio.lowlevel.checkpoint()
    await trio.lowlevel.checkpoint_if_cancelled()  # a run cancelled by now never starts
    system.root.start_child(run_child)


def _desk(spec: RunSpec, handle: RunHandle) -> QuestionDesk | None:
    """The run's one question desk, when it takes questions; nobody to answer halts it."""
    if spec.questions is None:
        return None
    after = spec.resume.last_question if spec.resume is not None else 0
    return QuestionDesk(spec.questions, handle.clock, halt=handle.unanswered, after=after)


def _backends(
    spec: RunSpec, pool: BackendPool, redactor: Redactor
) -> Callable[[AgentConfig], Awaitable[LLMBackend]]:
    """Where the agents' backends come from: the pool, or the spec's test seam; either way
    wrapped in the run's redactor (actors/run/redaction.py)."""
    factory = spec.backend_factory

    async def made(agent: AgentConfig) -> LLMBackend:
        backend = factory(agent) if factory is not None else await pool.backend(agent)
        return redacting_backend(backend, redactor)

    return made


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
    clock: RunClock,
    services: RunServices,
) -> None:
    """Routing rules for the modes, then the tracker, the coordinator and the bus."""
    orchestrator = spec.config.orchestrator
    quiet_period = orchestrator.quiet_period
    if orchestrator.defer_voting_until_all_answered and orchestrator.max_new_answers_per_agent == 1:
        # Voting opens only once every agent has its one answer: no burst can follow, so
        # a quiet period would only add its latency.
        quiet_period = None
    bus_state = BusState()
    if quiet_period is not None:
        # Before AnswerProgress: an answer ends the quiet before it can release a vote
        # held for every agent's answer, so that hold is taken over by the quiet one.
        system.add_observer(AnswersArriving(bus_state, quiet_period))
    system.add_observer(AnswerProgress())
    # Drops first: an update that will be dropped should not be held on the way.
    if orchestrator.disable_injection:
        system.add_rule(DropInjection())
    system.add_rule(UpdatesAfterFirstAnswer())
    first_vote_wait = orchestrator.first_vote_wait
    if orchestrator.defer_voting_until_all_answered:
        system.add_rule(DeferVoting())
        first_vote_wait = None  # voting waits for every answer already, without a bound
    if first_vote_wait is not None:
        system.add_rule(FirstVoteWaitsForAnswers())
    if quiet_period is not None:
        system.add_rule(HoldUntilQuiet())

    faults = spec.faults
    tracker = services.tracker
    if tracker is not None:
        system.spawn(
            TRACKER,
            with_faults(lambda ctx: WriteTracker(ctx, state=tracker), faults),
            mailbox=_UNBOUNDED,
            supervisor=supervisor,
        )
    setup = CoordinatorSetup(
        bus=BUS,
        human=spec.human,
        clock=clock,
        workspaces=services.workspaces,
        tracker=TRACKER if tracker is not None else None,
    )
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
                first_vote_wait=first_vote_wait,
            ),
            faults,
        ),
        mailbox=_UNBOUNDED,
        supervisor=supervisor,
    )


def _spawn_agent(
    system: ActorSystem,
    spec: RunSpec,
    agent: AgentConfig,
    state: CoordinationState,
    backend: LLMBackend,
    tooling: AgentTooling,
    halted: trio.Event,
    corrections: Corrections,
    supervisor: Supervisor,
    transcript: TranscriptFile | None,
    desk: QuestionDesk | None,
) -> AgentMemory:
    setup = AgentSetup(
        agent=agent.id,
        anonymous_id=state.anonymous[agent.id],
        agents=len(state.agents),
        persona=agent.persona,
        instructions=agent.system_prompt,
        coordinator=COORDINATOR,
        orchestrator=spec.config.orchestrator,
        history=spec.history,
        mode=spec.mode,
        tools=tooling.tools,
        subagent_wrap=None if spec.faults is None else partial(with_faults, plan=spec.faults),
        workspace=tooling.workspace,
        transcript=transcript,
        questions=desk,
        executing_plan=read_execution_task(spec.task) is not None,
        loop=agent.loop,
        paor=agent.paor,
        corrections=corrections,
        halted=halted,
    )
    memory = AgentMemory()
    if spec.resume is not None and spec.resume.agent == agent.id:
        memory = _resumed_memory(spec.resume, state)

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


def _resumed(spec: RunSpec, paused: Path) -> RunResumed:
    """What the run records first when it resumes the paused run logged in ``paused``."""
    assert spec.resume is not None
    where = (
        os.path.relpath(paused, os.path.realpath(spec.log_dir))
        if spec.log_dir is not None
        else str(paused)
    )
    return RunResumed(
        at=trio.current_time(),
        resumed_from=where,
        agent=spec.resume.agent,
        question_id=spec.resume.question_id,
    )


def _coordination(spec: RunSpec) -> CoordinationState:
    """A fresh run's coordination state, or the paused run's that ``spec`` resumes.
    Raises :class:`~actors.coordination.restore.RestoreError` if it does not replay."""
    agents, orchestrator = [a.id for a in spec.config.agents], spec.config.orchestrator
    if spec.resume is None:
        return CoordinationState(task=spec.task, agents=agents, orchestrator=orchestrator)
    return restored_state(
        task=spec.task,
        agents=agents,
        orchestrator=orchestrator,
        asking=spec.resume.agent,
        history=spec.resume.history,
    )


def _resumed_memory(point: ResumePoint, state: CoordinationState) -> AgentMemory:
    """The asking agent's memory as the pause left it. A presenter's needs only its round
    (the presentation's transcript lines carry it). A round's agent starts that round again
    from its transcript (its round counter one before, as starting a round counts), with the
    answers it had given counted, voting open if the coordinator had opened it, and the
    answers it could see in its view."""
    memory = AgentMemory(resumed=point, round=point.round)
    if point.purpose is CallPurpose.ROUND:
        agent = point.agent
        memory.round = point.round - 1
        memory.answers_given = sum(1 for a in state.answers if a.agent == agent)
        memory.voting_open = state.voting_opened(agent)
        memory.supported = agent in state.supporters
        memory.merge(state.snapshot_for(agent))
    return memory


def not_started(
    spec: RunSpec, termination: Termination = Termination.FAILED, reason: str | None = None
) -> RunResult:
    """The result of a run that never opened (nothing ran, nothing was spent), so whoever
    waits on it — the caller of :func:`drive`, a server's watchers — still gets one."""
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
        termination=termination,
        failed_agents={},
        log_dir=str(spec.log_dir) if spec.log_dir else None,
        duration_s=0.0,
        failure_reason=reason,
    )
