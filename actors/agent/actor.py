"""AgentActor: one agent's rounds, commits and verdicts, driven by messages.

Each round is a :func:`~actors.loop.run_loop` in the actor's background work; the actor keeps
handling messages while it runs. What the round does is in :mod:`actors.agent.rounds`; here
is what the messages do to it.

When updates with answers the agent has not seen arrive mid-round, the round's in-flight
policy decides (see :mod:`actors.agent.policy`): ``inject`` shows them to the round at its
next step boundary; ``cancel`` stops the request now and schedules ONE restart by telling
itself ``ResumeRound`` (which queues behind every update already waiting, so a burst becomes
one restart; the next round starts only once the cancelled one has ended); ``finish`` lets
the request complete, discards it, and re-runs once. While a round is submitting its result
to the coordinator it is never cancelled: a submission the coordinator accepted must not be
forgotten by the agent.

What the agent knows is an :class:`AgentMemory` owned by the run, the round's transcript
included. A restarted agent re-arms its work from it in ``started``: a submission that was
waiting for its verdict is submitted again (the coordinator answers a repeated round with
the verdict it gave), a round in flight goes on from its transcript, a round about to
restart starts. A presentation in flight is not re-armed here: the coordinator's request
failed when this incarnation ended, and it asks again. The one-way message the previous
incarnation was handling when it crashed is lost (dead-lettered); so a restarted agent
rejoins: it asks the coordinator to send again what it may have missed (see
:class:`~actors.coordination.protocol.Rejoin`). A bug in ``started`` itself excludes the
agent; the run goes on without it.
"""

from __future__ import annotations

import trio

from conclave.actors.agent.events import AgentStatusChanged, RoundRestarted, RoundStarted
from conclave.actors.agent.memory import AgentMemory, AgentSetup, AgentStatus
from conclave.actors.agent.policy import round_policy, runs_paor
from conclave.actors.agent.protocol import ResumeRound, RoundOutcome, RoundSettled
from conclave.actors.agent.rounds import Rounds, Settled, Work
from conclave.actors.coordination.protocol import (
    AgentFailed,
    AnswerUpdate,
    AnswerView,
    Present,
    Rejoin,
    StartTask,
    StopWork,
    SubmitAnswer,
    SubmitVote,
    VotesReset,
    VotingOpen,
)
from conclave.actors.coordination.workflow import workflow_tools
from conclave.actors.llm.protocol import LLMBackend, ToolSchema
from conclave.config.schema import InFlightPolicy
from conclave.runtime import Actor, ActorContext, ConclaveRuntimeError, Envelope

__all__ = ["AgentActor", "AgentMemory", "AgentSetup", "AgentStatus"]

_REJOIN_TRIES = 3
"""Asks for a rejoin before giving up (each fails only if the coordinator crashed on it)."""


class AgentActor(Actor):
    def __init__(
        self, context: ActorContext, *, setup: AgentSetup, backend: LLMBackend, memory: AgentMemory
    ) -> None:
        super().__init__(context)
        self.setup = setup
        self.memory = memory
        self.rounds = Rounds(context, setup, backend, memory)
        self._round_scope: trio.CancelScope | None = None
        self._rounds_running = 0
        """Round tasks of this incarnation not yet ended (a cancelled one may be unwinding)."""
        self._resume_deferred = False
        """A ResumeRound came while a cancelled round was still unwinding."""
        self._presentation: Envelope | None = None
        """The latest presentation request, while one is being written."""

    async def started(self) -> None:
        """Re-arm the work in flight and, after a restart, rejoin. Never raises: a bug here
        excludes this agent instead of failing the run (see :meth:`start_failed`)."""
        try:
            self._rearm()
        except Exception as exc:
            self.start_failed(exc)
            return
        memory = self.memory
        halted = self.setup.halted.is_set()
        gone = halted or memory.status in (AgentStatus.EXCLUDED, AgentStatus.STOPPED)
        if self.context.incarnation > 1 and not gone:
            self.context.start_soon(self._rejoin)

    def start_failed(self, error: Exception) -> None:
        """This incarnation could not start: the agent is excluded and stops, and the run
        goes on with the others (a crash loop of restarts could not do better)."""
        reason = f"the agent could not start: {type(error).__name__}: {error}"
        self._cancel_round()
        self._set_status(AgentStatus.EXCLUDED, reason)
        self.context.tell_nowait(
            self.setup.coordinator, AgentFailed(agent=self.setup.agent, reason=reason)
        )
        self.context.stop()

    def _rearm(self) -> None:
        memory = self.memory
        if self.setup.halted.is_set():
            return  # the run is over (its StopWork may have died with the crash): rest
        if memory.status is AgentStatus.WORKING and memory.submission is not None:
            self._resubmit(memory.submission)
        elif (
            memory.status is AgentStatus.WORKING
            and memory.transcript is not None
            and not memory.stale
        ):
            self._resume_round()
        elif memory.status in (AgentStatus.WORKING, AgentStatus.RESTARTING):
            self._start_round()

    async def _rejoin(self) -> None:
        """Ask the coordinator to send again what the previous incarnation may have lost."""
        for _ in range(_REJOIN_TRIES):
            voted = self.memory.status is AgentStatus.VOTED
            try:
                await self.context.ask(
                    self.setup.coordinator, Rejoin(agent=self.setup.agent, voted=voted)
                )
            except ConclaveRuntimeError:
                continue  # the coordinator crashed on it and restarts: ask its successor
            return

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        memory = self.memory
        if isinstance(payload, StartTask):
            memory.task = payload.task
            if memory.status is AgentStatus.IDLE:
                self._start_round()
        elif isinstance(payload, AnswerUpdate):
            self._on_update(payload.answers)
        elif isinstance(payload, VotingOpen):
            memory.voting_open = True
            if memory.status in (AgentStatus.ANSWERED, AgentStatus.ANSWERED_NO_VOTING):
                self._start_round()
        elif isinstance(payload, VotesReset):
            if memory.status is AgentStatus.VOTED:
                self._start_round()
            elif memory.status is AgentStatus.WORKING:
                memory.vote_cleared = True
        elif isinstance(payload, ResumeRound):
            if payload.generation == memory.generation and memory.status is AgentStatus.RESTARTING:
                if self._rounds_running:
                    self._resume_deferred = True  # resumed when the cancelled round ends
                else:
                    self._start_round()
        elif isinstance(payload, RoundSettled):
            self._on_settled(payload)
        elif isinstance(payload, StopWork):
            self._cancel_round()
            memory.generation += 1
            if payload.excluded is None:
                self._set_status(AgentStatus.STOPPED)
            else:
                self._set_status(AgentStatus.EXCLUDED, payload.excluded)
        elif isinstance(payload, Present):
            self._set_status(AgentStatus.PRESENTING)
            # A repeated request (the coordinator restarted and asks again) joins the
            # presentation under way: its reply goes to the latest asker.
            if self._presentation is None:
                self.context.start_soon(self._present, payload)
            self._presentation = envelope

    # -- rounds ---------------------------------------------------------------------------

    def _offered(self) -> tuple[ToolSchema, ...]:
        orch = self.setup.orchestrator
        cap = orch.max_new_answers_per_agent
        may_answer = cap is None or self.memory.answers_given < cap
        memory = self.memory
        may_vote = (
            memory.voting_open
            and not orch.skip_voting
            and (memory.answers_given > 0 or memory.supported)
        )
        return workflow_tools(may_answer=may_answer, may_vote=may_vote)

    def _policy(self) -> InFlightPolicy:
        return round_policy(
            self.setup.orchestrator.in_flight_policy,
            has_tools=bool(self.setup.tools.schemas()),
            paor=self.memory.paor,
        )

    def _start_round(self) -> None:
        memory = self.memory
        if self.setup.halted.is_set():
            return
        tools = self._offered()
        if not tools:
            self._set_status(AgentStatus.ANSWERED_NO_VOTING)
            return
        memory.round += 1
        memory.paor = runs_paor(self.setup.loop, tools)
        memory.stale = False
        memory.prompt_built = False
        memory.vote_cleared = False
        memory.transcript = None
        memory.prompt_length = 0
        memory.shown = set()
        memory.shortened = False
        memory.status = AgentStatus.WORKING  # RoundStarted says so; no separate status event
        self.context.record(
            RoundStarted(
                at=trio.current_time(),
                agent=self.setup.agent,
                round=memory.round,
                tools=tuple(t.name for t in tools),
            )
        )
        self._spawn_round(lambda: self.rounds.fresh(tools, self._policy()))

    def _resume_round(self) -> None:
        """Go on with the round in flight from its transcript (the actor restarted)."""
        tools = self._offered()
        if not tools:
            self._set_status(AgentStatus.ANSWERED_NO_VOTING)
            return
        self._spawn_round(lambda: self.rounds.resume(tools, self._policy()))

    def _resubmit(self, submission: SubmitAnswer | SubmitVote) -> None:
        """Submit the round's result again: the previous incarnation ended waiting for the
        verdict, and the coordinator may or may not have taken it."""
        self.memory.committing = True
        self._spawn_round(lambda: self.rounds.resubmit(submission), committing=True)

    def _spawn_round(self, work: Work, *, committing: bool = False) -> None:
        memory = self.memory
        memory.generation += 1
        memory.committing = committing
        if not committing:
            memory.submission = None
        self._round_scope = trio.CancelScope()
        self._rounds_running += 1
        self.context.start_soon(self._round, memory.generation, self._round_scope, work)

    def _on_update(self, answers: tuple[AnswerView, ...]) -> None:
        if not self._merge(answers):
            return
        memory = self.memory
        if memory.status is AgentStatus.WORKING:
            if not memory.prompt_built:
                return  # the round has not read the view yet; it will see these answers
            policy = self._policy()
            if policy is InFlightPolicy.INJECT:
                return  # the round's next step boundary shows them
            if memory.committing or policy is InFlightPolicy.FINISH:
                memory.stale = True
                return
            self._cancel_round()
            memory.generation += 1
            self._restarted()
            self._set_status(AgentStatus.RESTARTING)
            self.context.tell_nowait(
                self.context.address, ResumeRound(generation=memory.generation)
            )
        elif memory.status is AgentStatus.ANSWERED_NO_VOTING:
            self._start_round()

    def _on_settled(self, settled: RoundSettled) -> None:
        memory = self.memory
        if settled.generation != memory.generation:
            return
        self._round_scope = None
        memory.committing = False
        memory.submission = None
        memory.transcript = None  # the round is over: nothing resumes it (and it may be big)
        outcome = settled.outcome
        if outcome is RoundOutcome.SAME_ANSWER:
            # It took part as an answerer does (not counted as an answer against its cap):
            # it votes next, once voting is open to it.
            if memory.voting_open:
                self._start_round()
            else:
                self._set_status(AgentStatus.ANSWERED)
        elif outcome is RoundOutcome.ANSWERED:
            memory.answers_given += 1
            skip = self.setup.orchestrator.skip_voting
            if memory.voting_open and not skip:
                self._start_round()
            else:
                self._set_status(AgentStatus.ANSWERED_NO_VOTING if skip else AgentStatus.ANSWERED)
                if skip and memory.stale:
                    self._start_round()
        elif outcome is RoundOutcome.VOTED:
            if memory.vote_cleared:
                self._start_round()
            else:
                self._set_status(AgentStatus.VOTED)
        elif outcome is RoundOutcome.STALE:
            self._restarted()
            self._start_round()
        elif outcome is RoundOutcome.RETRY:
            self._start_round()  # not this agent's doing: a fresh round, not a restart
        else:
            self._set_status(AgentStatus.EXCLUDED, settled.reason)
            self.context.tell_nowait(
                self.setup.coordinator, AgentFailed(agent=self.setup.agent, reason=settled.reason)
            )
            self.context.stop()

    def _restarted(self) -> None:
        self.context.record(
            RoundRestarted(
                at=trio.current_time(),
                agent=self.setup.agent,
                round=self.memory.round,
                policy=self._policy(),
            )
        )

    def _cancel_round(self) -> None:
        if self._round_scope is not None:
            self._round_scope.cancel()
            self._round_scope = None

    async def _round(self, generation: int, scope: trio.CancelScope, work: Work) -> None:
        """Run a round's ``work`` and settle it. When the round ends, however it ends, a
        restart deferred until then goes ahead.

        Unless the agent is idle, it tells itself ``RoundSettled``: the round settles behind
        the mail it is handling or has waiting, as the agent's messages always are handled in
        order. Idle (most rounds) is parked in its mailbox's receive with nothing queued; then
        it settles here and now, exactly when the message would be handled (the actor's
        ``handle`` never awaits, so it is not midway through another), and a run routes two
        messages fewer per agent (2,000 agents in a ring: 27,500 -> 23,500 messages, CPU
        -6 %). An empty queue alone is not idle: mail handed straight to the agent's waiting
        receive, or taken before a receive lets other tasks run, is in flight and not queued,
        and settling before it reordered a peer's answer and the round's end (a PAOR round
        then saw that answer injected twice)."""
        try:
            with scope:
                settled: Settled = await work()
                outcome = RoundSettled(
                    generation=generation,
                    outcome=settled.outcome,
                    label=settled.label,
                    reason=settled.reason,
                )
                mailbox = self.context.mailbox_statistics()
                if mailbox.queued or not mailbox.waiting_receivers:
                    self.context.tell_nowait(self.context.address, outcome)
                else:
                    self._on_settled(outcome)
        finally:
            self._rounds_running -= 1
            if not self._rounds_running and self._resume_deferred:
                self._resume_deferred = False
                self.context.tell_nowait(
                    self.context.address, ResumeRound(generation=self.memory.generation)
                )

    async def _present(self, present: Present) -> None:
        """Write the presentation and reply to the latest request for it."""
        reply = await self.rounds.present(present)
        request, self._presentation = self._presentation, None
        assert request is not None
        self.context.reply(request, reply)

    # -- helpers --------------------------------------------------------------------------

    def _merge(self, answers: tuple[AnswerView, ...]) -> bool:
        return self.memory.merge(self.rounds.seen(answers))

    def _set_status(self, status: AgentStatus, detail: str = "") -> None:
        if self.memory.status is status and not detail:
            return
        self.memory.status = status
        self.context.record(
            AgentStatusChanged(
                at=trio.current_time(), agent=self.setup.agent, status=status, detail=detail
            )
        )
