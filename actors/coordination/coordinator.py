"""The Coordinator actor: turns messages into CoordinationState transitions and carries out
what they decide (verdicts, vote resets, the bus, the override window, the presentation).

Everything it has in flight lives in the run-owned state, so a restarted coordinator
re-arms it in :meth:`Coordinator.started`: the run is started if it was not (a run resuming
a paused one starts from its restored state: see :mod:`actors.coordination.restore`), a pending
presentation is asked for again, an open override window asks its human gate again, and
result waiters whose asks died with the previous incarnation are forgotten (their askers
ask again).

Workspaces (when agents have tools): an accepted answer's staged workspace copy is published
as its snapshot before anyone is told about the answer. With writable context paths the
WriteTracker takes its baseline where the modes table puts the writing phase (coordination
start, or right before the final presentation, which then runs with write access even when
the strategy alone would skip it). After the final answer, background work diffs the writes
and saves the deliverable workspace in ``final/``; then the run ends. That work is kept in
the run-owned :class:`WrapUpState`, so a restarted coordinator does it again.

The override window: when voting completes and the run has a :class:`HumanGate`, the
coordinator waits for a decision with the run clock paused. The gate decides in background
work (a person may take minutes), and an ``OverrideDecision`` or ``Continue`` message (the
run handle's) decides as well: whichever comes first is applied, and the other is dropped.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    AnswerRepeated,
    FinalAnswerProduced,
    HumanGateFailed,
    PresentationFailed,
    PresenterReplaced,
    RunStarted,
    VoteAdded,
    VotesCleared,
    VotingComplete,
)
from conclave.actors.coordination.protocol import (
    AgentFailed,
    AgentFailing,
    AnswerAccepted,
    AnswersRequest,
    AnswersSnapshot,
    AnswerSupported,
    AnswerUpdate,
    AnswerVerdict,
    AwaitResult,
    Continue,
    ExcludeFailing,
    OverrideChosen,
    OverrideDecision,
    Present,
    Presentation,
    PresentationDone,
    PresenterGraceOver,
    Rejoin,
    Rejoined,
    RunFinished,
    SameAnswer,
    StartTask,
    StopWork,
    SubmitAnswer,
    SubmitVote,
    VotesReset,
    VotingOpen,
    WrappedUp,
)
from conclave.actors.coordination.state import (
    Accepted,
    Answer,
    CoordinationState,
    PendingPresentation,
    Phase,
)
from conclave.actors.human.gate import Choose, HumanGate, OverrideRequest
from conclave.actors.run.clock import RunClock
from conclave.actors.workspace.events import (
    FinalWorkspaceSaved,
    PresentingForWrites,
    SnapshotPublished,
)
from conclave.actors.workspace.tracker import DiffWrites, TakeBaseline
from conclave.actors.workspace.workspaces import RunWorkspaces
from conclave.config.schema import FinalAnswerStrategy
from conclave.config.schema.context import ContextWritePhase
from conclave.runtime import (
    Actor,
    ActorContext,
    Address,
    ConclaveRuntimeError,
    Envelope,
    Message,
    Undeliverable,
)

__all__ = ["Coordinator", "CoordinatorSetup", "WrapUp", "WrapUpState"]

_TRACKER_TRIES = 3
"""Asks of the WriteTracker before going on without it (each fails only if it crashed on it)."""


@attrs.frozen(kw_only=True)
class WrapUp:
    """The final answer, waiting for what must follow it before the run ends."""

    content: str
    source: str | None
    """The workspace to save in ``final/`` (the presenter's, or the chosen answer's
    snapshot); ``None``: there is none."""
    agent: str | None
    """Whose workspace it is."""


@attrs.define(kw_only=True)
class WrapUpState:
    """Run-owned: a wrap-up in progress survives a restart of the coordinator."""

    pending: WrapUp | None = None


@attrs.frozen(kw_only=True)
class CoordinatorSetup:
    bus: Address
    human: HumanGate | None = None
    """Who decides the override window; ``None``: no window, the vote's winner presents."""
    clock: RunClock | None = None
    """The run's timer, paused while ``human`` decides."""
    workspaces: RunWorkspaces | None = None
    """The agents' workspaces and snapshots; ``None`` when agents have no tools."""
    tracker: Address | None = None
    """The WriteTracker; ``None`` when no context path is writable."""
    wrap_up: WrapUpState = attrs.Factory(WrapUpState)


class Coordinator(Actor):
    def __init__(
        self, context: ActorContext, *, state: CoordinationState, setup: CoordinatorSetup
    ) -> None:
        super().__init__(context)
        self.state = state
        self.setup = setup
        self._gate: trio.CancelScope | None = None
        """The human gate's question while it is open in this incarnation."""

    async def started(self) -> None:
        state = self.state
        # Asks taken by an earlier incarnation failed when it ended (their askers were told
        # and ask again); a reply now could only be dead-lettered. Plain tells still wait.
        state.result_waiters = [w for w in state.result_waiters if w.correlation_id is None]
        if state.phase is Phase.PRESENTING and state.presentation is not None:
            self._send_presentation(state.presentation)
        if state.phase is Phase.AWAITING_OVERRIDE:
            self._ask_human()
        if self.setup.wrap_up.pending is not None and state.phase is not Phase.DONE:
            self.context.start_soon(self._wrapping)
        if state.failing_since is not None:
            self._remind_failing(state.failing_since)
        if state.started:
            return
        if self._writes_during(ContextWritePhase.COORDINATION):
            await self._ask_tracker(TakeBaseline())  # before any agent can write
        self.context.record(
            RunStarted(
                at=trio.current_time(),
                task=state.task,
                agents=tuple(state.agents),
                anonymous_ids=tuple(state.anonymous[a] for a in state.agents),
                strategy=state.orchestrator.final_answer_strategy,
            )
        )
        if state.resumed and state.coordination_done():
            self._check_done()  # a paused presentation: the same presenter is asked again
        else:
            for agent in state.live:
                self.context.tell_nowait(agent_address(agent), StartTask(task=state.task))
        # Only now: if anything above crashed, the restarted coordinator starts the run again
        # (agents ignore a second StartTask).
        state.started = True

    def _writes_during(self, phase: ContextWritePhase) -> bool:
        """Whether writable context paths are written in ``phase`` of this run."""
        orchestrator = self.state.orchestrator
        return self.setup.tracker is not None and orchestrator.context_write_phase is phase

    async def _ask_tracker(self, request: TakeBaseline | DiffWrites) -> None:
        """Ask the WriteTracker; if it keeps crashing on the request, go on without it (the
        run's result still reports what it can: see ``TrackerState.settle``)."""
        assert self.setup.tracker is not None
        for _ in range(_TRACKER_TRIES):
            try:
                await self.context.ask(self.setup.tracker, request)
            except ConclaveRuntimeError:
                continue
            return

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if isinstance(payload, SubmitAnswer):
            self._on_answer(envelope, payload)
        elif isinstance(payload, SubmitVote):
            self._on_vote(envelope, payload)
        elif isinstance(payload, AnswersRequest):
            self._on_answers_request(envelope, payload)
        elif isinstance(payload, AgentFailed):
            exclusion = self.state.fail(payload.agent, payload.reason)
            if exclusion is not None:
                self.context.record(
                    AgentExcluded(
                        at=trio.current_time(),
                        agent=payload.agent,
                        reason=payload.reason,
                        withdrawn_vote=exclusion.withdrawn_vote,
                    )
                )
                self._check_done()
        elif isinstance(payload, AgentFailing):
            if payload.agent in self.state.live:
                if payload.error is None:
                    self.state.failing.pop(payload.agent, None)
                else:
                    self.state.failing[payload.agent] = payload.error
                self._watch_failing()
                self._watch_presenter()
        elif isinstance(payload, ExcludeFailing):
            self._exclude_failing(payload.since)
        elif isinstance(payload, PresenterGraceOver):
            self._presenter_grace_over(payload.since)
        elif isinstance(payload, AwaitResult):
            self.state.result_waiters.append(envelope)
            if self.state.phase is Phase.DONE:
                self._answer_waiters()
        elif isinstance(payload, OverrideDecision | Continue):
            self._on_override(envelope, payload)
        elif isinstance(payload, OverrideChosen):
            self._on_gate_decided(payload)
        elif isinstance(payload, Rejoin):
            self._on_rejoin(envelope, payload)
        elif isinstance(payload, PresentationDone):
            self._on_presentation_done(payload)
        elif isinstance(payload, WrappedUp):
            pending, self.setup.wrap_up.pending = self.setup.wrap_up.pending, None
            if pending is not None:
                self._finish(pending.content)

    def _on_answers_request(self, envelope: Envelope, request: AnswersRequest) -> None:
        state = self.state
        if not state.knows(request.agent):
            error = (
                f"no agent {request.agent!r} in this run; "
                f"it has: {', '.join(state.agents[:10])}{' …' if len(state.agents) > 10 else ''}"
            )
            self.context.reply(envelope, AnswersSnapshot(answers=(), visible=0, error=error))
            return
        self.context.reply(
            envelope,
            AnswersSnapshot(
                answers=state.snapshot_for(request.agent),
                visible=state.visible_answer_count(request.agent),
            ),
        )

    def _on_rejoin(self, envelope: Envelope, rejoin: Rejoin) -> None:
        """Send a restarted agent again what it may have lost (see :class:`Rejoin`). Each
        goes through the routing rules as the first sending did, so a rule that held or
        dropped the first holds or drops this one too."""
        state = self.state
        agent = rejoin.agent
        if state.started and state.phase is Phase.COORDINATING and agent in state.live:
            address = agent_address(agent)
            self.context.tell_nowait(address, StartTask(task=state.task))
            chars = state.orchestrator.answer_preview_chars
            shown = tuple(view.cut(chars) for view in state.snapshot_for(agent))
            if shown:
                self.context.tell_nowait(address, AnswerUpdate(answers=shown))
            if state.voting_opened(agent):
                self.context.tell_nowait(address, VotingOpen())
            if rejoin.voted and agent not in state.votes:
                self.context.tell_nowait(address, VotesReset())
        self.context.reply(envelope, Rejoined())

    def _repeated(self, envelope: Envelope, submission: SubmitAnswer | SubmitVote) -> bool:
        """Answer a re-submitted round with the verdict it already got (see SubmitAnswer).

        A vote (or an answer counted as one) cleared since it was accepted is stale instead:
        the reset that told its voter so went to the incarnation that crashed, and the voter
        must look again."""
        state = self.state
        agent = submission.agent
        accepted = state.accepted_rounds.get(agent)
        if accepted is None or accepted.round != submission.round:
            return False
        if accepted.vote and agent not in state.votes and state.phase is Phase.COORDINATING:
            error = "A newer answer reset your vote; look at the answers again."
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=error, stale=True))
            return True
        order = state.order_of.get(accepted.label, 0)
        verdict = AnswerVerdict(
            accepted=True, label=accepted.label, same=accepted.same, order=order
        )
        self.context.reply(envelope, verdict)
        return True

    def _on_answer(self, envelope: Envelope, submit: SubmitAnswer) -> None:
        state = self.state
        if self._repeated(envelope, submit):
            return
        outcome = state.submit_answer(submit.agent, submit.content, submit.shown)
        if outcome.same_as is not None and outcome.counted is not None:
            self._on_same_answer(envelope, submit, outcome.same_as, outcome.counted)
            return
        answer = outcome.answer
        if answer is None:
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=outcome.error))
            return
        state.accepted_rounds[submit.agent] = Accepted(
            round=submit.round, label=answer.label, vote=False
        )
        # Published before anyone hears of the answer (its author included): whoever is
        # shown it can read its snapshot at once.
        self._publish(answer.agent, answer.label)
        order = state.order_of[answer.label]
        self.context.reply(envelope, AnswerVerdict(accepted=True, label=answer.label, order=order))
        now = trio.current_time()
        self.context.record(
            AnswerAdded(at=now, agent=answer.agent, label=answer.label, content=answer.content)
        )
        # The bus first: routing it marks answers as arriving (the quiet-period fact), so the
        # hold covers the resets and "you may vote now" below, even for a burst's first answer.
        self.context.tell_nowait(
            self.setup.bus,
            AnswerAccepted(
                agent=answer.agent, label=answer.label, content=answer.content, order=order
            ),
        )
        cleared = outcome.cleared_voters
        if cleared:
            self.context.record(
                VotesCleared(at=now, by_label=answer.label, voters=cleared, cleared=len(cleared))
            )
            for voter in cleared:
                if voter != answer.agent:  # the author knows: it has just answered
                    self.context.tell_nowait(agent_address(voter), VotesReset())
        if not state.orchestrator.skip_voting:
            self.context.tell_nowait(agent_address(answer.agent), VotingOpen())
        self._check_done()

    def _on_same_answer(
        self, envelope: Envelope, submit: SubmitAnswer, answer: Answer, counted: SameAnswer
    ) -> None:
        """The answer was the same as the current answer ``answer``: no answer is added; it
        counted as the agent's vote for it, or as its part (see
        :meth:`CoordinationState.submit_answer`). Either way the agent has answered as far
        as the routing rules go, and may vote from now on."""
        state = self.state
        agent = submit.agent
        vote = counted is SameAnswer.VOTE
        state.accepted_rounds[agent] = Accepted(
            round=submit.round, label=answer.label, vote=vote, same=counted
        )
        order = state.order_of[answer.label]
        verdict = AnswerVerdict(accepted=True, label=answer.label, same=counted, order=order)
        self.context.reply(envelope, verdict)
        now = trio.current_time()
        if vote:
            self.context.record(
                VoteAdded(
                    at=now,
                    voter=agent,
                    label=answer.label,
                    reason=state.vote_reasons[agent],
                    same_answer=True,
                )
            )
        else:
            self.context.record(AnswerRepeated(at=now, agent=agent, label=answer.label))
        self.context.tell_nowait(self.setup.bus, AnswerSupported(agent=agent, label=answer.label))
        self.context.tell_nowait(agent_address(agent), VotingOpen())
        if vote:
            self._check_done()

    def _publish(self, agent: str, label: str) -> None:
        workspaces = self.setup.workspaces
        if workspaces is None:
            return
        try:
            path = workspaces.publish(agent, label)
        except OSError:
            return  # the answer stands without a snapshot; its readers find no workspace
        if path is not None:
            self.context.record(
                SnapshotPublished(at=trio.current_time(), agent=agent, label=label, path=str(path))
            )

    def _on_vote(self, envelope: Envelope, vote: SubmitVote) -> None:
        if self._repeated(envelope, vote):
            return
        answer, error, stale = self.state.submit_vote(
            vote.agent, vote.target, vote.reason, vote.seen
        )
        if answer is None:
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=error, stale=stale))
            return
        self.state.accepted_rounds[vote.agent] = Accepted(
            round=vote.round, label=answer.label, vote=True
        )
        self.context.reply(envelope, AnswerVerdict(accepted=True, label=answer.label))
        self.context.record(
            VoteAdded(
                at=trio.current_time(), voter=vote.agent, label=answer.label, reason=vote.reason
            )
        )
        self._check_done()

    def _check_done(self) -> None:
        state = self.state
        if state.phase is not Phase.COORDINATING:
            return
        if not state.coordination_done():
            self._watch_failing()
            return
        for agent in state.live:
            self.context.tell_nowait(agent_address(agent), StopWork())
        winner = state.choose_winner()
        if winner is None:
            excluded = f"{len(state.failed)} of {len(state.agents)} agents excluded"
            self._finish(None, error=f"no agent produced an answer ({excluded})")
            return
        state.winner = winner
        state.presenter = winner.agent
        if not state.orchestrator.skip_voting:
            self.context.record(
                VotingComplete(
                    at=trio.current_time(),
                    winner=winner.agent,
                    label=winner.label,
                    tally=winner.tally,
                )
            )
            if self.setup.human is not None:
                state.phase = Phase.AWAITING_OVERRIDE
                self._ask_human()
                return
        self._present()

    # -- agents that keep failing while the others are done -------------------------------

    def _watch_failing(self) -> None:
        """Start the grace of the agents that keep failing once every other agent is done;
        forget it when that is no longer so (one recovered, or another has work again)."""
        state = self.state
        if state.orchestrator.failing_agent_grace is None:
            return
        if not state.stragglers():
            state.failing_since = None
        elif state.failing_since is None:
            state.failing_since = trio.current_time()
            self._remind_failing(state.failing_since)

    def _remind_failing(self, since: float, reminder: Message | None = None) -> None:
        """Tell this coordinator ``reminder`` (by default, to exclude the agents still
        failing) when the grace that began at ``since`` is over."""
        grace = self.state.orchestrator.failing_agent_grace
        assert grace is not None
        message = ExcludeFailing(since=since) if reminder is None else reminder

        async def remind() -> None:
            await trio.sleep_until(since + grace)
            self.context.tell_nowait(self.context.address, message)

        self.context.start_soon(remind)

    def _watch_presenter(self) -> None:
        """The presenter is the last agent at work: if its calls keep failing it has
        ``failing_agent_grace``, as any agent whose peers are all done, then the chosen
        answer stands without it. Its grace is forgotten when a call succeeds."""
        state = self.state
        pending = state.presentation
        if (
            state.orchestrator.failing_agent_grace is None
            or state.phase is not Phase.PRESENTING
            or pending is None
        ):
            return
        if pending.presenter not in state.failing:
            pending.failing_since = None
        elif pending.failing_since is None:
            since = pending.failing_since = trio.current_time()
            self._remind_failing(since, PresenterGraceOver(since=since))

    def _presenter_grace_over(self, since: float) -> None:
        state = self.state
        pending = state.presentation
        if state.phase is not Phase.PRESENTING or pending is None:
            return
        if pending.failing_since != since:
            return  # the presenter recovered since, or this presentation is not that one
        grace = state.orchestrator.failing_agent_grace
        error = (
            f"{pending.presenter}'s LLM calls kept failing for {grace:g}s "
            f"(orchestrator.failing_agent_grace); last failure: "
            f"{state.failing.get(pending.presenter, 'unknown')}"
        )
        self.context.record(
            PresentationFailed(
                at=trio.current_time(),
                presenter=pending.presenter,
                attempt=pending.sent,
                error=error,
                retrying=False,
            )
        )
        self._fall_back(pending, error)

    def _exclude_failing(self, since: float) -> None:
        """The grace is over: the run goes on without the agents that kept failing. Each
        is failed through an ``AgentFailed`` to this coordinator, as an agent fails itself,
        so the routing rules' facts (who is live) hear of it too."""
        state = self.state
        if state.failing_since != since:
            return  # a grace that ended early (someone recovered, or had work again)
        state.failing_since = None
        grace = state.orchestrator.failing_agent_grace
        for agent in state.stragglers():
            reason = (
                f"its LLM calls kept failing {grace:g}s after every other agent was done "
                f"(orchestrator.failing_agent_grace); last failure: {state.failing[agent]}"
            )
            self.context.tell_nowait(agent_address(agent), StopWork(excluded=reason))
            self.context.tell_nowait(self.context.address, AgentFailed(agent=agent, reason=reason))

    def _ask_human(self) -> None:
        """Put the override question to the human gate, in background work."""
        human, winner = self.setup.human, self.state.winner
        if human is None or winner is None or self._gate is not None:
            return
        state = self.state
        request = OverrideRequest(
            winner=winner.agent,
            label=winner.label,
            tally=dict(winner.tally),
            answers={a: state.latest[a].label for a in state.agents if a in state.latest},
        )
        self._gate = trio.CancelScope()
        self.context.start_soon(self._gate_decides, human, request, self._gate)

    async def _gate_decides(
        self, human: HumanGate, request: OverrideRequest, scope: trio.CancelScope
    ) -> None:
        """Wait for the gate with the run clock paused. Cancelled when a message decides
        first or the incarnation ends; the clock runs again either way. A gate that fails
        leaves the vote's winner, and says why."""
        clock = self.setup.clock
        with scope:
            if clock is not None:
                clock.pause()
            try:
                choice = await human.override(request)
            except Exception as exc:
                error = f"the human gate failed: {type(exc).__name__}: {exc}"
                self.context.record(HumanGateFailed(at=trio.current_time(), error=error))
                decided = OverrideChosen(presenter=None)
            else:
                decided = OverrideChosen(
                    presenter=choice.agent if isinstance(choice, Choose) else None
                )
            finally:
                if clock is not None:
                    clock.resume()
            self.context.tell_nowait(self.context.address, decided)

    def _close_gate(self) -> None:
        if self._gate is not None:
            self._gate.cancel()
            self._gate = None

    def _on_gate_decided(self, decided: OverrideChosen) -> None:
        state = self.state
        self._gate = None
        if state.phase is not Phase.AWAITING_OVERRIDE:
            return  # a message decided first
        presenter = decided.presenter
        if presenter is not None and presenter not in state.latest:
            with_answers = ", ".join(a for a in state.agents if a in state.latest)
            error = (
                f"the human gate chose {presenter!r}, which has no answer (agents with one: "
                f"{with_answers}); the vote's winner presents"
            )
            self.context.record(HumanGateFailed(at=trio.current_time(), error=error))
            presenter = None
        if presenter is not None:
            state.presenter = presenter
            state.overridden = True
        self._present()

    def _on_override(self, envelope: Envelope, decision: OverrideDecision | Continue) -> None:
        state = self.state
        if state.phase is not Phase.AWAITING_OVERRIDE or state.winner is None:
            if envelope.correlation_id is not None:
                self.context.reply(
                    envelope, AnswerVerdict(accepted=False, error="no override window is open")
                )
            return
        if isinstance(decision, OverrideDecision):
            if decision.presenter not in state.latest:
                with_answers = ", ".join(a for a in state.agents if a in state.latest)
                error = f"{decision.presenter!r} has no answer; choose one of: {with_answers}"
                if envelope.correlation_id is not None:
                    self.context.reply(envelope, AnswerVerdict(accepted=False, error=error))
                return
            state.presenter = decision.presenter
            state.overridden = True
        self._close_gate()
        if envelope.correlation_id is not None:
            self.context.reply(
                envelope,
                AnswerVerdict(accepted=True, label=state.latest[state.presenter or ""].label),
            )
        self._present()

    def _present(self) -> None:
        """Produce the final answer by the strategy, from the chosen presenter's answer.

        With writable context paths written in the presentation phase, a presentation runs
        whatever the strategy says (someone has to write them), with write access."""
        state = self.state
        orchestrator = state.orchestrator
        chosen = state.latest[state.presenter or ""]
        strategy = orchestrator.final_answer_strategy
        writes = self._writes_during(ContextWritePhase.PRESENTATION)
        skipped = orchestrator.no_final_presentation or strategy is FinalAnswerStrategy.WINNER_REUSE
        if skipped and not writes:
            if orchestrator.no_final_presentation:
                state.presenter = None  # no presentation runs in this mode: nobody presented
            self._wrap_up(chosen.content, self._snapshot_of(chosen.label), chosen.agent)
            return
        if chosen.agent not in state.live:
            self._replace_presenter(chosen.agent)
            if state.presenter is None:
                self._wrap_up(chosen.content, self._snapshot_of(chosen.label), chosen.agent)
                return
        presenter = state.presenter or chosen.agent
        if skipped:
            why = "no final presentation" if orchestrator.no_final_presentation else strategy.value
            self.context.record(
                PresentingForWrites(
                    at=trio.current_time(),
                    presenter=presenter,
                    strategy=strategy,
                    reason=f"writable context paths need someone to write them; {presenter} "
                    f"presents with write access although the run asked for {why}",
                )
            )
            strategy = FinalAnswerStrategy.WINNER_PRESENT
        state.phase = Phase.PRESENTING
        if strategy is FinalAnswerStrategy.SYNTHESIZE:
            shown = tuple(
                state.view_of(state.latest[a])
                for a in sorted(state.latest, key=lambda a: state.anonymous[a])
            )
            own = state.latest[presenter].label
        else:
            shown = (state.view_of(chosen),)
            own = chosen.label
        request = Present(
            strategy=strategy, task=state.task, own_label=own, answers=shown, write_access=writes
        )
        state.presentation = PendingPresentation(
            presenter=presenter, request=request, fallback=chosen
        )
        self._send_presentation(state.presentation)

    def _snapshot_of(self, label: str) -> str | None:
        workspaces = self.setup.workspaces
        path = workspaces.published.get(label) if workspaces is not None else None
        return str(path) if path is not None else None

    def _replace_presenter(self, excluded: str) -> None:
        """The chosen presenter was excluded. ``synthesize`` needs a presenter, not a
        particular one: another live agent takes over. Otherwise the chosen answer stands."""
        state = self.state
        why = f"{excluded} was excluded ({state.failed.get(excluded, 'no reason given')})"
        if state.orchestrator.final_answer_strategy is FinalAnswerStrategy.SYNTHESIZE:
            replacement = state.replacement_presenter()
            if replacement is not None:
                reason = f"{why}; {replacement} synthesizes instead (most votes among live agents)"
            else:
                reason = f"{why} and no live agent has an answer; its answer stands verbatim"
        else:
            replacement = None
            reason = f"{why}; its answer stands verbatim, nobody presents it"
        state.presenter = replacement
        self.context.record(
            PresenterReplaced(
                at=trio.current_time(), winner=excluded, presenter=replacement, reason=reason
            )
        )

    def _send_presentation(self, pending: PendingPresentation) -> None:
        pending.sent += 1
        self.context.start_soon(
            self._ask_presenter, pending.presenter, pending.request, pending.sent
        )

    async def _ask_presenter(self, presenter: str, request: Present, sending: int) -> None:
        if request.write_access:
            await self._ask_tracker(TakeBaseline())  # kept if taken for an earlier sending
        try:
            reply = await self.context.ask(agent_address(presenter), request)
        except Undeliverable as exc:
            done = PresentationDone(sending=sending, content=None, error=str(exc), interrupted=True)
        else:
            assert isinstance(reply, Presentation)
            done = PresentationDone(sending=sending, content=reply.content, error=reply.error)
        self.context.tell_nowait(self.context.address, done)

    def _on_presentation_done(self, done: PresentationDone) -> None:
        state = self.state
        pending = state.presentation
        if state.phase is not Phase.PRESENTING or pending is None:
            return
        if done.content is not None:
            # From whichever sending: a presentation is a presentation.
            workspaces = self.setup.workspaces
            workspace = workspaces.agents.get(pending.presenter) if workspaces else None
            source = str(workspace.path) if workspace is not None else None
            self._wrap_up(done.content, source, pending.presenter)
            return
        if done.sending != pending.sent:
            return  # a superseded sending failed; the latest one is still under way
        error = done.error or "the presentation failed"
        if done.interrupted:
            pending.interrupted += 1
        retry = done.interrupted and pending.interrupted < state.orchestrator.max_tries_per_round
        self.context.record(
            PresentationFailed(
                at=trio.current_time(),
                presenter=pending.presenter,
                attempt=pending.sent,
                error=error,
                retrying=retry,
            )
        )
        if retry:
            self._send_presentation(pending)
            return
        self._fall_back(pending, error)

    def _fall_back(self, pending: PendingPresentation, error: str) -> None:
        """The presentation failed for good: the chosen answer is still a complete answer,
        and is the final one; nobody presented it."""
        state = self.state
        state.presentation_error = error
        state.presenter = None
        chosen = pending.fallback
        self._wrap_up(chosen.content, self._snapshot_of(chosen.label), chosen.agent)

    def _wrap_up(self, content: str, source: str | None, agent: str | None) -> None:
        """The final answer is ``content``: diff the writes and save ``source`` in ``final/``
        (background work), then finish. Without workspaces or tracked writes, finish now."""
        setup, state = self.setup, self.state
        if setup.workspaces is None and setup.tracker is None:
            self._finish(content)
            return
        state.phase = Phase.PRESENTING  # no more answers or votes while wrapping up
        state.presentation = None
        setup.wrap_up.pending = WrapUp(content=content, source=source, agent=agent)
        self.context.start_soon(self._wrapping)

    async def _wrapping(self) -> None:
        """Diff the writes and save the deliverable; done again whole by a restarted
        coordinator (both steps are idempotent). Then tell the coordinator to finish."""
        pending = self.setup.wrap_up.pending
        if pending is None:
            return
        if self.setup.tracker is not None:
            await self._ask_tracker(DiffWrites())
        workspaces = self.setup.workspaces
        if workspaces is not None and pending.source is not None:
            try:
                final = await workspaces.save_final(Path(pending.source))
            except OSError:
                final = None  # the answer stands; the result names no workspace
            if final is not None:
                self.context.record(
                    FinalWorkspaceSaved(
                        at=trio.current_time(), agent=pending.agent or "", path=str(final)
                    )
                )
        self.context.tell_nowait(self.context.address, WrappedUp())

    def _finish(self, content: str | None, *, error: str | None = None) -> None:
        state = self.state
        if state.phase is Phase.DONE:
            return
        state.final_answer = content
        state.phase = Phase.DONE
        state.presentation = None
        if content is not None:
            self.context.record(
                FinalAnswerProduced(
                    at=trio.current_time(),
                    presenter=state.presenter,
                    strategy=state.orchestrator.final_answer_strategy,
                    content=content,
                )
            )
        elif error is not None:
            state.failure_reason = error
        self._answer_waiters()

    def _answer_waiters(self) -> None:
        state = self.state
        waiters, state.result_waiters = state.result_waiters, []
        for waiter in waiters:
            self.context.reply(
                waiter,
                RunFinished(
                    final_answer=state.final_answer,
                    winner=state.winner.agent if state.winner else None,
                    presenter=state.presenter,
                ),
            )
