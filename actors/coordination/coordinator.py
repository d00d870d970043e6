"""The Coordinator actor: turns messages into CoordinationState transitions and carries out
what they decide (verdicts, vote resets, the bus, the override window, the presentation)."""

from __future__ import annotations

import attrs
import trio

from actors.coordination.bus import agent_address
from actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    FinalAnswerProduced,
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
from actors.coordination.state import CoordinationState, Phase, Winner
from config.schema import FinalAnswerStrategy
from runtime import Actor, ActorContext, Address, ConclaveRuntimeError, Envelope

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
            state = self.state
            self.context.reply(
                envelope,
                AnswersSnapshot(
                    answers=state.snapshot_for(payload.agent),
                    visible=state.visible_answer_count(payload.agent),
                ),
            )
        elif isinstance(payload, AgentFailed):
            self.state.fail(payload.agent, payload.reason)
            self.context.record(
                AgentExcluded(at=trio.current_time(), agent=payload.agent, reason=payload.reason)
            )
            self._check_done()
        elif isinstance(payload, AwaitResult):
            self.state.result_waiters.append(envelope)
            if self.state.phase is Phase.DONE:
                self._answer_waiters()
        elif isinstance(payload, OverrideDecision | Continue):
            self._on_override(envelope, payload)
        elif isinstance(payload, PresentationDone):
            self._finish(payload.content, error=payload.error)

    def _on_answer(self, envelope: Envelope, submit: SubmitAnswer) -> None:
        state = self.state
        outcome = state.submit_answer(submit.agent, submit.content)
        answer = outcome.answer
        if answer is None:
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=outcome.error))
            return
        self.context.reply(envelope, AnswerVerdict(accepted=True, label=answer.label))
        now = trio.current_time()
        self.context.record(
            AnswerAdded(at=now, agent=answer.agent, label=answer.label, content=answer.content)
        )
        if outcome.cleared_voters:
            self.context.record(
                VotesCleared(at=now, by_label=answer.label, cleared=len(outcome.cleared_voters))
            )
            for voter in outcome.cleared_voters:
                self.context.tell_nowait(agent_address(voter), VotesReset())
        self.context.tell_nowait(
            self.setup.bus,
            AnswerAccepted(agent=answer.agent, label=answer.label, content=answer.content),
        )
        if not state.orchestrator.skip_voting:
            self.context.tell_nowait(agent_address(answer.agent), VotingOpen())
        self._check_done()

    def _on_vote(self, envelope: Envelope, vote: SubmitVote) -> None:
        answer, error, stale = self.state.submit_vote(
            vote.agent, vote.target, vote.reason, vote.seen
        )
        if answer is None:
            self.context.reply(envelope, AnswerVerdict(accepted=False, error=error, stale=stale))
            return
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
            self._finish(None, error="no agent produced an answer")
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
        self._present(winner)

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
        self._present(state.winner)

    def _present(self, winner: Winner) -> None:
        state = self.state
        presenter = state.presenter or winner.agent
        strategy = state.orchestrator.final_answer_strategy
        chosen = state.latest[presenter]
        if (
            strategy is FinalAnswerStrategy.WINNER_REUSE
            or state.orchestrator.no_final_presentation
            or presenter not in state.live
        ):
            if presenter not in state.live:
                state.presenter = None  # excluded: its answer stands, but nobody presented it
            self._finish(chosen.content)
            return
        state.phase = Phase.PRESENTING
        if strategy is FinalAnswerStrategy.SYNTHESIZE:
            shown = tuple(
                AnswerView(label=state.latest[a].label, content=state.latest[a].content)
                for a in sorted(state.latest, key=lambda a: state.anonymous[a])
            )
        else:
            shown = (AnswerView(label=chosen.label, content=chosen.content),)
        request = Present(
            strategy=strategy.value, task=state.task, own_label=chosen.label, answers=shown
        )
        self.context.start_soon(self._ask_presenter, presenter, request)

    async def _ask_presenter(self, presenter: str, request: Present) -> None:
        try:
            reply = await self.context.ask(agent_address(presenter), request)
        except ConclaveRuntimeError as exc:
            done = PresentationDone(content=None, error=str(exc))
        else:
            assert isinstance(reply, Presentation)
            done = PresentationDone(content=reply.content, error=reply.error)
        self.context.tell_nowait(self.context.address, done)

    def _finish(self, content: str | None, *, error: str | None = None) -> None:
        state = self.state
        if state.phase is Phase.DONE:
            return
        if content is None and state.presenter is not None:
            # The presentation failed: the winner's own answer is still a complete answer.
            state.presentation_error = error
            content = state.latest[state.presenter].content
        state.final_answer = content
        state.phase = Phase.DONE
        if content is not None:
            self.context.record(
                FinalAnswerProduced(
                    at=trio.current_time(),
                    presenter=state.presenter,
                    strategy=state.orchestrator.final_answer_strategy.value,
                    content=content,
                )
            )
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
