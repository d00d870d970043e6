"""The Coordinator actor: turns messages into CoordinationState transitions and carries out
what they decide (verdicts, vote resets, the bus, the override window, the presentation).

Everything it has in flight lives in the run-owned state, so a restarted coordinator
re-arms it in :meth:`Coordinator.started`: the run is started if it was not, a pending
presentation is asked for again, and result waiters whose asks died with the previous
incarnation are forgotten (their askers ask again).
"""

from __future__ import annotations

import attrs
import trio

from actors.coordination.bus import agent_address
from actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    FinalAnswerProduced,
    PresentationFailed,
    PresenterReplaced,
    RunStarted,
    VoteAdded,
    VotesCleared,
    VotingComplete,
)
from actors.coordination.protocol import (
    AgentFailed,
    AnswerAccepted,
    AnswersRequest,
    AnswersSnapshot,
    AnswerVerdict,
    AnswerView,
    AwaitResult,
    Continue,
    OverrideDecision,
    Present,
    Presentation,
    PresentationDone,
    RunFinished,
    StartTask,
    StopWork,
    SubmitAnswer,
    SubmitVote,
    VotesReset,
    VotingOpen,
)
from actors.coordination.state import CoordinationState, PendingPresentation, Phase
from config.schema import FinalAnswerStrategy
from runtime import Actor, ActorContext, Address, Envelope, Undeliverable

__all__ = ["Coordinator", "CoordinatorSetup"]


@attrs.frozen(kw_only=True)
class CoordinatorSetup:
    bus: Address
    override_window: bool = False


class Coordinator(Actor):
    def __init__(
        self, context: ActorContext, *, state: CoordinationState, setup: CoordinatorSetup
    ) -> None:
        super().__init__(context)
        self.state = state
        self.setup = setup

    async def started(self) -> None:
        state = self.state
        # Asks taken by an earlier incarnation failed when it ended (their askers were told
        # and ask again); a reply now could only be dead-lettered. Plain tells still wait.
        state.result_waiters = [w for w in state.result_waiters if w.correlation_id is None]
        if state.phase is Phase.PRESENTING and state.presentation is not None:
            self._send_presentation(state.presentation)
        if state.started:
            return
        self.context.record(
            RunStarted(
                at=trio.current_time(),
                task=state.task,
                agents=tuple(state.agents),
                anonymous_ids=tuple(state.anonymous[a] for a in state.agents),
                strategy=state.orchestrator.final_answer_strategy.value,
            )
        )
        for agent in state.agents:
            self.context.tell_nowait(agent_address(agent), StartTask(task=state.task))
        # Only now: if anything above crashed, the restarted coordinator starts the run again
        # (agents ignore a second StartTask).
        state.started = True

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if isinstance(payload, SubmitAnswer):
            self._on_answer(envelope, payload)
        elif isinstance(payload, SubmitVote):
            self._on_vote(envelope, payload)
        elif isinstance(payload, AnswersRequest):
            self._on_answers_request(envelope, payload)
        elif isinstance(payload, AgentFailed):
            if self.state.fail(payload.agent, payload.reason):
                self.context.record(
                    AgentExcluded(
                        at=trio.current_time(), agent=payload.agent, reason=payload.reason
                    )
                )
                self._check_done()
        elif isinstance(payload, AwaitResult):
            self.state.result_waiters.append(envelope)
            if self.state.phase is Phase.DONE:
                self._answer_waiters()
        elif isinstance(payload, OverrideDecision | Continue):
            self._on_override(envelope, payload)
        elif isinstance(payload, PresentationDone):
            self._on_presentation_done(payload)

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

    def _repeated(self, envelope: Envelope, agent: str, round_: int) -> bool:
        """Answer a re-submitted round with the verdict it already got (see SubmitAnswer)."""
        accepted = self.state.accepted_rounds.get(agent)
        if accepted is None or accepted[0] != round_:
            return False
        self.context.reply(envelope, AnswerVerdict(accepted=True, label=accepted[1]))
        return True

    def _on_answer(self, envelope: Envelope, submit: SubmitAnswer) -> None:
        state = self.state
        if self._repeated(envelope, submit.agent, submit.round):
            return
        outcome = state.submit_answer(submit.agent, submit.content)
        answer = outcome.answer
        if answer is None:
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=outcome.error))
            return
        state.accepted_rounds[submit.agent] = (submit.round, answer.label)
        self.context.reply(envelope, AnswerVerdict(accepted=True, label=answer.label))
        now = trio.current_time()
        self.context.record(
            AnswerAdded(at=now, agent=answer.agent, label=answer.label, content=answer.content)
        )
        # The bus first: routing it marks answers as arriving (the quiet-period fact), so the
        # hold covers the resets and "you may vote now" below, even for a burst's first answer.
        self.context.tell_nowait(
            self.setup.bus,
            AnswerAccepted(agent=answer.agent, label=answer.label, content=answer.content),
        )
        if outcome.cleared_voters:
            self.context.record(
                VotesCleared(at=now, by_label=answer.label, cleared=len(outcome.cleared_voters))
            )
            for voter in outcome.cleared_voters:
                self.context.tell_nowait(agent_address(voter), VotesReset())
        if not state.orchestrator.skip_voting:
            self.context.tell_nowait(agent_address(answer.agent), VotingOpen())
        self._check_done()

    def _on_vote(self, envelope: Envelope, vote: SubmitVote) -> None:
        if self._repeated(envelope, vote.agent, vote.round):
            return
        answer, error, stale = self.state.submit_vote(
            vote.agent, vote.target, vote.reason, vote.seen
        )
        if answer is None:
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=error, stale=stale))
            return
        self.state.accepted_rounds[vote.agent] = (vote.round, answer.label)
        self.context.reply(envelope, AnswerVerdict(accepted=True, label=answer.label))
        self.context.record(
            VoteAdded(
                at=trio.current_time(), voter=vote.agent, label=answer.label, reason=vote.reason
            )
        )
        self._check_done()

    def _check_done(self) -> None:
        state = self.state
        if state.phase is not Phase.COORDINATING or not state.coordination_done():
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
            if self.setup.override_window:
                state.phase = Phase.AWAITING_OVERRIDE
                return
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
        if envelope.correlation_id is not None:
            self.context.reply(
                envelope,
                AnswerVerdict(accepted=True, label=state.latest[state.presenter or ""].label),
            )
        self._present()

    def _present(self) -> None:
        """Produce the final answer by the strategy, from the chosen presenter's answer."""
        state = self.state
        orchestrator = state.orchestrator
        chosen = state.latest[state.presenter or ""]
        strategy = orchestrator.final_answer_strategy
        if orchestrator.no_final_presentation:
            state.presenter = None  # no presentation runs in this mode: nobody presented
            self._finish(chosen.content)
            return
        if strategy is FinalAnswerStrategy.WINNER_REUSE:
            self._finish(chosen.content)
            return
        if chosen.agent not in state.live:
            self._replace_presenter(chosen.agent)
            if state.presenter is None:
                self._finish(chosen.content)
                return
        presenter = state.presenter or chosen.agent
        state.phase = Phase.PRESENTING
        if strategy is FinalAnswerStrategy.SYNTHESIZE:
            shown = tuple(
                AnswerView(label=state.latest[a].label, content=state.latest[a].content)
                for a in sorted(state.latest, key=lambda a: state.anonymous[a])
            )
            own = state.latest[presenter].label
        else:
            shown = (AnswerView(label=chosen.label, content=chosen.content),)
            own = chosen.label
        request = Present(strategy=strategy.value, task=state.task, own_label=own, answers=shown)
        state.presentation = PendingPresentation(
            presenter=presenter, request=request, fallback=chosen.content
        )
        self._send_presentation(state.presentation)

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
            self._finish(done.content)  # from whichever sending: a presentation is a presentation
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
        # The chosen answer is still a complete answer; nobody presented it.
        state.presentation_error = error
        state.presenter = None
        self._finish(pending.fallback)

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
                    strategy=state.orchestrator.final_answer_strategy.value,
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
