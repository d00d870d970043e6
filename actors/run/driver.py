"""Running one coordinated task: ``run(spec)`` or ``async with open_run(spec) as handle``.

The run supervisor starts the Coordinator, the InjectionBus and one AgentActor per agent
(under their own supervisor), wires the mode rules, and waits for the coordinator's result.
Stop order is the reverse of start order: agents first, so a submission in flight still
finds its coordinator; then the bus; the coordinator last.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import trio

from actors.agent.actor import AgentActor, AgentMemory, AgentSetup
from actors.coordination.bus import InjectionBus, agent_address
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
from actors.run.result import DecidedBy, RunResult, RunStats, Termination
from config.schema import AgentConfig, ConclaveConfig
from runtime import (
    ActorContext,
    ActorSystem,
    Address,
    EventTap,
    MailboxSpec,
    Restart,
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


def build_backend(agent: AgentConfig) -> LLMBackend:
    return ScriptedBackend(
        agent_id=agent.id, persona=agent.persona, policy=agent.backend, seed=agent.backend.seed
    )


@attrs.frozen(kw_only=True)
class RunSpec:
    task: str
    config: ConclaveConfig
    """The config after mode overrides (see :func:`config.modes.apply_modes`)."""
    log_dir: Path | None = None
    override_window: bool = False
    backend_factory: Callable[[AgentConfig], LLMBackend] = build_backend


class RunHandle:
    """A run in progress: wait for its result, cancel it, or decide its override window."""

    def __init__(
        self,
        system: ActorSystem,
        state: CoordinationState,
        stats: RunStats,
        spec: RunSpec,
        memories: dict[str, AgentMemory],
    ) -> None:
        self.system = system
        self._memories = memories
        self.state = state
        self.stats = stats
        self.spec = spec
        self._started = time.monotonic()
        self._cancel = trio.CancelScope()
        self._result: RunResult | None = None

    def cancel(self) -> None:
        """End the run now; :meth:`result` returns what exists with ``termination="cancelled"``."""
        self._cancel.cancel()

    async def override(self, presenter: str) -> AnswerVerdict:
        verdict = await self.system.ask(COORDINATOR, OverrideDecision(presenter=presenter))
        assert isinstance(verdict, AnswerVerdict)
        return verdict

    async def continue_(self) -> AnswerVerdict:
        verdict = await self.system.ask(COORDINATOR, Continue())
        assert isinstance(verdict, AnswerVerdict)
        return verdict

    async def result(self) -> RunResult:
        if self._result is not None:
            return self._result
        timeout = self.spec.config.orchestrator.run_timeout
        with trio.move_on_after(math.inf if timeout is None else timeout) as timer, self._cancel:
            while True:
                try:
                    await self.system.ask(COORDINATOR, AwaitResult())
                    break
                except Undeliverable:
                    continue  # the coordinator crashed on it and restarted: ask again
        if self._cancel.cancelled_caught:
            termination = Termination.CANCELLED
        elif timer.cancelled_caught:
            termination = Termination.TIMEOUT
        elif self.state.final_answer is None:
            termination = Termination.FAILED
        else:
            termination = Termination.COMPLETED
        if termination in (Termination.CANCELLED, Termination.TIMEOUT):
            self._halt()
        self._result = self.snapshot(termination)
        self.system.record(
            RunEnded(
                at=trio.current_time(),
                termination=termination.value,
                winner=self._result.winner,
                final_answer=self._result.final_answer,
            )
        )
        return self._result

    def _halt(self) -> None:
        """End coordination now: no more answers or votes are accepted, and every agent is
        told to cancel its round. Without this, a thousand agents would keep answering (and
        the bus fanning out) while the shutdown stops them one by one."""
        self.state.phase = Phase.DONE
        for memory in self._memories.values():
            memory.halted = True  # mail already queued must not start rounds either
        for agent in self.state.live:
            self.system.tell_nowait(agent_address(agent), StopWork())

    def snapshot(self, termination: Termination | str) -> RunResult:
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
    config = spec.config
    orchestrator = config.orchestrator
    agent_ids = [a.id for a in config.agents]
    state = CoordinationState(task=spec.task, agents=agent_ids, orchestrator=orchestrator)
    stats = RunStats()
    log = spec.log_dir / "events.jsonl" if spec.log_dir is not None else None
    async with open_actor_system(name="run", event_log=log, taps=[stats, *taps]) as system:
        system.add_observer(AnswerProgress())
        # Drops first: an update that will be dropped should not be held on the way.
        if orchestrator.disable_injection:
            system.add_rule(DropInjection())
        system.add_rule(UpdatesAfterFirstAnswer())
        if orchestrator.defer_voting_until_all_answered:
            system.add_rule(DeferVoting())
        quiet_period = orchestrator.quiet_period
        if (
            orchestrator.defer_voting_until_all_answered
            and orchestrator.max_new_answers_per_agent == 1
        ):
            # Voting opens only once every agent has its one answer: no burst can follow, so
            # a quiet period would only add its latency.
            quiet_period = None
        if quiet_period is not None:
            system.add_rule(HoldUntilQuiet())

        coordinator_setup = CoordinatorSetup(bus=BUS, override_window=spec.override_window)
        system.spawn(
            COORDINATOR,
            lambda ctx: Coordinator(ctx, state=state, setup=coordinator_setup),
            mailbox=_UNBOUNDED,
        )
        visibility = Visibility(orchestrator.visibility, agent_ids)
        system.spawn(
            BUS,
            lambda ctx: InjectionBus(
                ctx,
                visibility=visibility,
                preview_chars=orchestrator.answer_preview_chars,
                quiet_period=quiet_period,
            ),
            mailbox=_UNBOUNDED,
        )
        agents_supervisor, child = system.supervisor_child(
            "agents", SupervisorSpec(intensity=max(3, len(agent_ids)), period=60.0)
        )
        system.root.start_child(child)
        memories = {
            agent.id: _spawn_agent(system, spec, agent, state, agents_supervisor)
            for agent in config.agents
        }
        handle = RunHandle(system, state, stats, spec, memories)
        try:
            yield handle
        except BaseException:
            # The caller was cancelled (Ctrl+C) or failed: the log still says how it ended.
            if handle._result is None:
                handle._halt()
                system.record(
                    RunEnded(
                        at=trio.current_time(),
                        termination=Termination.CANCELLED.value,
                        winner=None,
                        final_answer=None,
                    )
                )
            raise
        if handle._result is None:
            handle.cancel()
            await handle.result()


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
        factory,
        restart=Restart.TRANSIENT,
        mailbox=_UNBOUNDED,
        supervisor=supervisor,
    )
    return memory


async def run(spec: RunSpec, *, taps: Iterable[EventTap] = ()) -> RunResult:
    async with open_run(spec, taps=taps) as handle:
        return await handle.result()
