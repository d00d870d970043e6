"""RunHandle: a run in progress, as :func:`actors.run.driver.open_run` hands it out.

The run lives in a task of ``open_run`` (:meth:`RunHandle._live`): it spawns the actors,
waits for the coordinator's result, and races that against the run's clock. Whichever way
the run ends — its result, the timeout, the cost budget, :meth:`~RunHandle.cancel`,
:meth:`~RunHandle.fail`, or the caller leaving ``open_run`` — it ends in one place,
:meth:`RunHandle._conclude`: the result is taken, ``run_ended`` recorded (the last event any
tap hears) and the log closed. Waiting for the result only waits for that moment, so a wait
that is cancelled can simply be made again.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import trio

from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.protocol import (
    AnswerVerdict,
    AwaitResult,
    Continue,
    OverrideDecision,
    StopWork,
)
from conclave.actors.coordination.state import CoordinationState, Phase
from conclave.actors.human.unanswered import OnQuestion
from conclave.actors.paor.corrections import Corrections, NoRoundLeft
from conclave.actors.run.clock import RunClock
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import RunResult, RunStats
from conclave.actors.run.services import RunServices
from conclave.actors.run.spec import RunSpec
from conclave.actors.run.termination import BEST_SO_FAR, DecidedBy, Termination
from conclave.actors.run.usage import UsageTap
from conclave.actors.workspace.writes import Writes
from conclave.config.schema import LoopKind
from conclave.runtime import ActorSystem, Address, JsonlEventLog, Undeliverable

__all__ = ["COORDINATOR", "RunHandle"]

COORDINATOR = Address("coordinator")


class _Gated(Protocol):
    def until_run_ended(self) -> None: ...


class RunHandle:
    """Wait for the run's result, cancel it, fail it, or decide its override window."""

    def __init__(
        self,
        *,
        system: ActorSystem,
        spec: RunSpec,
        state: CoordinationState,
        stats: RunStats,
        usage: UsageTap,
        clock: RunClock,
        log: JsonlEventLog | None,
        taps: Sequence[_Gated],
        services: RunServices | None = None,
    ) -> None:
        self.system = system
        self.spec = spec
        self.state = state
        self.stats = stats
        self.clock = clock
        """The run's timer: ``run_timeout`` counts on it, paused while a person decides."""
        self._usage = usage
        self._log = log
        self._taps = taps
        self._services = services
        self._started = time.monotonic()
        self._scope = trio.CancelScope()
        """The run's life: cancelled by whatever ends it first."""
        self._ending: Termination | None = None
        self._failure: str | None = None
        self._actors_started = False
        self._result: RunResult | None = None
        self._ended = trio.Event()
        agents = spec.config.agents
        self.corrections = Corrections(
            tuple(agent.id for agent in agents),
            paor=tuple(agent.id for agent in agents if agent.loop is LoopKind.PAOR),
        )
        """The user's corrections on their way to the PAOR agents (:meth:`correct`)."""
        self._halted = trio.Event()

    @property
    def halted(self) -> trio.Event:
        """Set when the run ends before coordination did; every agent of the run reads it
        (:attr:`~actors.agent.memory.AgentSetup.halted`). Only the handle sets it."""
        return self._halted

    # -- steering -------------------------------------------------------------------------

    def cancel(self) -> None:
        """End the run now; :meth:`result` returns what exists with ``termination="cancelled"``."""
        self._end_with(Termination.CANCELLED)

    def correct(self, text: str, agent: str | None = None) -> None:
        """A correction from the user for ``agent`` (``None``: every PAOR agent): a PAOR
        agent takes it at its next step boundary, records ``CorrectionApplied``, and its next
        plan accounts for it; one that comes after its round ended waits for its next PAOR
        round, and is recorded ``CorrectionUnused`` if the run ends first. Raises
        ``ValueError`` for an empty text, an agent that is unknown or does not run PAOR, or a
        run that has ended (see :class:`~actors.paor.corrections.Corrections`), and
        :class:`~actors.paor.corrections.NoRoundLeft` once the answer rounds are over (the
        vote is decided, the answer presented): no PAOR round is left to take it."""
        rounds_over = self.state.phase is not Phase.COORDINATING
        if rounds_over and self.corrections.paor and self._result is None:
            raise NoRoundLeft
        self.corrections.put(text, agent)

    def fail(self, reason: str) -> None:
        """End the run now as ``failed`` because of ``reason``, unless it is ending already.
        The reason is redacted: it may quote an exception from anywhere in the run."""
        if self._ending is None:
            services = self._services
            self._failure = services.redactor(reason) if services is not None else reason
        self._end_with(Termination.FAILED)

    def unanswered(self, how: OnQuestion) -> None:
        """An agent's question cannot be answered now: fail the run, or pause it to be
        resumed with the answer (the question is the result's ``pending_question``)."""
        if how is OnQuestion.PAUSE:
            self._end_with(Termination.PAUSED)
        else:
            self.fail("an agent asked a question and nobody could answer (--on-question fail)")

    def budget_reached(self) -> None:
        """The priced calls reached the cost budget: halt the run like a timeout."""
        self._end_with(Termination.MAX_COST)

    def _end_with(self, termination: Termination) -> None:
        """The first reason to end stands; the run ends at its next checkpoint."""
        if self._ending is None:
            self._ending = termination
        self._scope.cancel()

    async def override(self, presenter: str) -> AnswerVerdict:
        """Let ``presenter`` present instead of the vote's winner, while the override window
        is open (``RunSpec.human`` is a :class:`~actors.human.manual.ManualGate`). The
        verdict says whether it was taken, and why not."""
        verdict = await self.system.ask(COORDINATOR, OverrideDecision(presenter=presenter))
        assert isinstance(verdict, AnswerVerdict)
        return verdict

    async def continue_(self) -> AnswerVerdict:
        """Keep the vote's winner and close the override window."""
        verdict = await self.system.ask(COORDINATOR, Continue())
        assert isinstance(verdict, AnswerVerdict)
        return verdict

    # -- the result -----------------------------------------------------------------------

    async def result(self) -> RunResult:
        """Wait for the run to end (completed, timed out, over budget, cancelled or failed);
        never raises what went wrong inside the run. Cancelling the wait changes nothing: the
        run goes on, and the next call waits again. Every call returns the same result."""
        await self._ended.wait()
        assert self._result is not None
        return self._result

    @property
    def outcome(self) -> RunResult | None:
        """The result if the run has ended, without waiting; else ``None``."""
        return self._result

    def snapshot(
        self, termination: Termination | str, *, failure_reason: str | None = None
    ) -> RunResult:
        """The result as of now: on timeout or cancel, the best answer so far."""
        termination = Termination(termination)
        state = self.state
        final = state.final_answer
        winner = state.winner.agent if state.winner else None
        decided_by = _decided_by(state)
        if final is None and termination is not Termination.PAUSED:
            best = state.best_so_far()
            if best is not None:
                final, winner = best.content, best.agent
                decided_by = BEST_SO_FAR[termination]
        stats = self.stats
        if termination is Termination.COMPLETED and winner in stats.paor_limited:
            termination = Termination.MAX_ITERATIONS
        usage = self._usage.usage()
        services = self._services
        workspaces = services.workspaces if services is not None else None
        deliverable = workspaces.final if workspaces is not None else None
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
            failed_agents=dict(state.failed),
            log_dir=str(self.spec.log_dir) if self.spec.log_dir else None,
            duration_s=round(time.monotonic() - self._started, 3),
            llm_completed=stats.llm_completed,
            input_tokens=None if stats.unreported else stats.input_tokens,
            output_tokens=None if stats.unreported else stats.output_tokens,
            messages_routed=self.system.statistics().routed,
            dead_letters=stats.dead_letters,
            presentation_error=state.presentation_error,
            decided_by=decided_by,
            failure_reason=failure_reason if termination is Termination.FAILED else None,
            usage=usage,
            cost_usd=usage.total.cost_usd,
            writes=self._writes(termination),
            workspace_path=str(deliverable) if deliverable is not None else None,
            assumptions=list(stats.assumptions),
            pending_question=stats.pending_question,
        )

    def _writes(self, termination: Termination) -> Writes:
        """What the run wrote to its writable context paths. A run that ended before the
        coordinator diffed them (timeout, Ctrl+C, failure) walks them once more here: the
        run is over, and what it wrote must still be reported. A paused run keeps its
        baseline for the run that resumes it, whose writes then cover the whole run."""
        tracker = self._services.tracker if self._services is not None else None
        if tracker is None:
            return Writes()
        if termination is Termination.PAUSED:
            tracker.keep_baseline()
        try:
            return tracker.settle() or Writes()
        except OSError:
            return Writes()

    # -- the run's life (open_run's task) ---------------------------------------------------

    async def _live(self, start: Callable[[], Awaitable[None]]) -> None:
        """Start the run's actors with ``start``, then wait for the coordinator's result
        while the clock runs. However this ends (this task cancelled included: the caller
        left ``open_run``), the run is concluded on the way out."""
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._expire)
                    try:
                        await start()
                        self._actors_started = True
                        await self._await_coordinator()
                    except Exception as exc:
                        when = "waiting for the result" if self._actors_started else "starting"
                        self.fail(f"{when} failed: {type(exc).__name__}: {exc}")
                    else:
                        if self.state.final_answer is None:
                            reason = self.state.failure_reason
                            self.fail(reason or "coordination ended without an answer")
                        self._end_with(Termination.COMPLETED)
        finally:
            self._conclude()

    async def _expire(self) -> None:
        await self.clock.expire()
        self._end_with(Termination.TIMEOUT)

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

    def _conclude(self) -> None:
        """The one place a run ends: take the result, halt what still works, record
        ``run_ended`` (the last event any tap hears) and close the log. Synchronous, so it
        completes even while the task that calls it is being cancelled."""
        if self._ended.is_set():
            return
        try:
            termination = self._ending or Termination.CANCELLED  # nothing chose: the caller left
            if termination is not Termination.COMPLETED:
                self._halt()
            result = self._result = self.snapshot(termination, failure_reason=self._failure)
            for tap in self._taps:
                tap.until_run_ended()
            for unused in self.corrections.close():
                # Only a PAOR run has any: a run without PAOR does not load its events.
                from conclave.actors.paor.events import CorrectionUnused

                self.system.record(
                    CorrectionUnused(
                        at=trio.current_time(), agent=unused.agent, correction=unused.text
                    )
                )
            self.system.record(
                RunEnded(
                    at=trio.current_time(),
                    termination=result.termination,
                    winner=result.winner,
                    final_answer=result.final_answer,
                    decided_by=result.decided_by,
                    failure_reason=result.failure_reason,
                )
            )
            if self._log is not None:
                self._log.close()
        finally:
            self._ended.set()  # even after a bug above: a waiter must not hang

    def _halt(self) -> None:
        """End coordination now: no more answers or votes are accepted, and every agent is
        told to cancel its round. Without this, a thousand agents would keep answering (and
        the bus fanning out) while the shutdown stops them one by one."""
        self.state.halt()
        self._halted.set()  # mail already queued must not start rounds either
        if not self._actors_started:
            return  # spawned agents that never started have no round to stop
        for agent in self.state.live:
            address = agent_address(agent)
            if self.system.is_registered(address):
                self.system.tell_nowait(address, StopWork())


def _decided_by(state: CoordinationState) -> DecidedBy | None:
    """How coordination chose its final answer; ``None`` if it never produced one."""
    if state.final_answer is None:
        return None
    if state.overridden:
        return DecidedBy.OVERRIDE
    if state.winner is not None and state.winner.tally:
        return DecidedBy.VOTES
    return DecidedBy.NO_VOTES
