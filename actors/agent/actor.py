"""AgentActor: one agent's LLM loop, driven by messages.

Each round is background work in the actor's nursery; the actor keeps handling messages
while it runs. When updates with answers the agent has not seen arrive mid-round, the
in-flight policy decides: ``cancel`` stops the request now and schedules ONE restart by
telling itself ``ResumeRound`` (which queues behind every update already waiting, so a burst
becomes one restart; the next round starts only once the cancelled one has ended);
``finish`` lets the request complete, discards it, and re-runs once.
While a round is submitting its result to the coordinator it is never cancelled: a submission
the coordinator accepted must not be forgotten by the agent.

What the agent knows is an :class:`AgentMemory` owned by the run. A restarted agent re-arms
its work from it in ``started``: a round in flight starts again, and a submission that was
waiting for its verdict is submitted again (the coordinator answers a repeated round with
the verdict it gave). A presentation in flight is not re-armed here: the coordinator's
request failed when this incarnation ended, and it asks again.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from functools import partial

import attrs
import trio

from actors.agent.events import (
    AgentStatusChanged,
    LlmRequestFinished,
    LlmRequestStarted,
    RoundRestarted,
    RoundStarted,
)
from actors.agent.protocol import ResumeRound, RoundSettled
from actors.coordination.protocol import (
    AgentFailed,
    AnswersRequest,
    AnswersSnapshot,
    AnswerUpdate,
    AnswerVerdict,
    AnswerView,
    Present,
    Presentation,
    StartTask,
    StopWork,
    SubmitAnswer,
    SubmitVote,
    VotesReset,
    VotingOpen,
)
from actors.coordination.workflow import (
    NewAnswer,
    WorkflowError,
    parse_workflow_call,
    workflow_tools,
)
from actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    LLMBackend,
    LLMError,
    ToolSchema,
)
from actors.prompts.coordination import presentation_messages, round_messages
from config.schema import InFlightPolicy, OrchestratorConfig
from runtime import Actor, ActorContext, Address, ConclaveRuntimeError, Envelope

__all__ = ["AgentActor", "AgentMemory", "AgentSetup", "AgentStatus"]


class AgentStatus(enum.Enum):
    IDLE = "idle"
    WORKING = "working"
    RESTARTING = "restarting"
    AWAITING_VOTE = "answered"
    """Answered; waiting for "you may vote now"."""
    ANSWERED = "answered, no voting"
    VOTED = "voted"
    STOPPED = "stopped"
    PRESENTING = "presenting"
    EXCLUDED = "excluded"


@attrs.define
class AgentMemory:
    """What an agent knows. Owned by the run so it survives a crash of the actor."""

    task: str = ""
    view: dict[str, AnswerView] = attrs.Factory(dict)
    """Latest answer seen per anonymous author."""
    labels_seen: set[str] = attrs.Factory(set)
    snapshot_visible: int = 0
    answers_given: int = 0
    voting_open: bool = False
    status: AgentStatus = AgentStatus.IDLE
    round: int = 0
    generation: int = 0
    stale: bool = False
    """Answers arrived after this round's prompt was built."""
    prompt_built: bool = False
    committing: bool = False
    """The round's result went to the coordinator; from here on it is never cancelled."""
    halted: bool = False
    """Set by the run when it ends (timeout, Ctrl+C): start nothing new, whatever arrives."""
    vote_cleared: bool = False
    """A VotesReset came while a round was in flight: if that round settles as a vote, the
    reset was about that very vote (it overtook the round's RoundSettled), so vote again."""
    submission: SubmitAnswer | SubmitVote | None = None
    """The round's result while the coordinator's verdict on it is awaited."""


@attrs.frozen(kw_only=True)
class AgentSetup:
    agent: str
    anonymous_id: str
    agents: int
    persona: str
    coordinator: Address
    orchestrator: OrchestratorConfig


class AgentActor(Actor):
    def __init__(
        self, context: ActorContext, *, setup: AgentSetup, backend: LLMBackend, memory: AgentMemory
    ) -> None:
        super().__init__(context)
        self.setup = setup
        self.backend = backend
        self.memory = memory
        self._round_scope: trio.CancelScope | None = None
        self._rounds_running = 0
        """Round tasks of this incarnation not yet ended (a cancelled one may be unwinding)."""
        self._resume_deferred = False
        """A ResumeRound came while a cancelled round was still unwinding."""
        self._presentation: Envelope | None = None
        """The latest presentation request, while one is being written."""

    async def started(self) -> None:
        memory = self.memory
        if memory.status is AgentStatus.WORKING and memory.submission is not None:
            self._resubmit(memory.submission)
        elif memory.status in (AgentStatus.WORKING, AgentStatus.RESTARTING):
            self._start_round()

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
            if memory.status in (AgentStatus.AWAITING_VOTE, AgentStatus.ANSWERED):
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
            self._set_status(AgentStatus.STOPPED)
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
        may_vote = (
            self.memory.voting_open and not orch.skip_voting and self.memory.answers_given > 0
        )
        return workflow_tools(may_answer=may_answer, may_vote=may_vote)

    def _start_round(self) -> None:
        memory = self.memory
        if memory.halted:
            return
        tools = self._offered()
        if not tools:
            self._set_status(AgentStatus.ANSWERED)
            return
        memory.generation += 1
        memory.round += 1
        memory.stale = False
        memory.prompt_built = False
        memory.committing = False
        memory.vote_cleared = False
        memory.submission = None
        memory.status = AgentStatus.WORKING  # RoundStarted says so; no separate status event
        self.context.record(
            RoundStarted(
                at=trio.current_time(),
                agent=self.setup.agent,
                round=memory.round,
                tools=tuple(t.name for t in tools),
            )
        )
        self._round_scope = trio.CancelScope()
        self._rounds_running += 1
        self.context.start_soon(
            self._round, memory.generation, self._round_scope, partial(self._attempts, tools)
        )

    def _resubmit(self, submission: SubmitAnswer | SubmitVote) -> None:
        """Submit the round's result again: the previous incarnation ended waiting for the
        verdict, and the coordinator may or may not have taken it."""
        memory = self.memory
        memory.generation += 1
        memory.committing = True
        self._round_scope = trio.CancelScope()
        self._rounds_running += 1
        self.context.start_soon(
            self._round, memory.generation, self._round_scope, partial(self._commit, submission)
        )

    def _on_update(self, answers: tuple[AnswerView, ...]) -> None:
        if not self._merge(answers):
            return
        memory = self.memory
        if memory.status is AgentStatus.WORKING:
            if not memory.prompt_built:
                return  # the round has not read the view yet; it will see these answers
            if (
                memory.committing
                or self.setup.orchestrator.in_flight_policy is InFlightPolicy.FINISH
            ):
                memory.stale = True
                return
            self._cancel_round()
            memory.generation += 1
            self._restarted()
            self._set_status(AgentStatus.RESTARTING)
            self.context.tell_nowait(
                self.context.address, ResumeRound(generation=memory.generation)
            )
        elif memory.status is AgentStatus.ANSWERED:
            self._start_round()

    def _on_settled(self, settled: RoundSettled) -> None:
        memory = self.memory
        if settled.generation != memory.generation:
            return
        self._round_scope = None
        memory.committing = False
        memory.submission = None
        if settled.outcome == "answered":
            memory.answers_given += 1
            skip = self.setup.orchestrator.skip_voting
            if memory.voting_open and not skip:
                self._start_round()
            else:
                self._set_status(AgentStatus.ANSWERED if skip else AgentStatus.AWAITING_VOTE)
                if skip and memory.stale:
                    self._start_round()
        elif settled.outcome == "voted":
            if memory.vote_cleared:
                self._start_round()
            else:
                self._set_status(AgentStatus.VOTED)
        elif settled.outcome == "stale":
            self._restarted()
            self._start_round()
        elif settled.outcome == "retry":
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
                policy=self.setup.orchestrator.in_flight_policy.value,
            )
        )

    def _cancel_round(self) -> None:
        if self._round_scope is not None:
            self._round_scope.cancel()
            self._round_scope = None

    async def _round(
        self, generation: int, scope: trio.CancelScope, work: Callable[[], Awaitable[Settled]]
    ) -> None:
        """Run a round's ``work`` and tell the agent how it settled. When the round ends,
        however it ends, a restart deferred until then goes ahead."""
        try:
            with scope:
                outcome, label, reason = await work()
                self.context.tell_nowait(
                    self.context.address,
                    RoundSettled(
                        generation=generation, outcome=outcome, label=label, reason=reason
                    ),
                )
        finally:
            self._rounds_running -= 1
            if not self._rounds_running and self._resume_deferred:
                self._resume_deferred = False
                self.context.tell_nowait(
                    self.context.address, ResumeRound(generation=self.memory.generation)
                )

    async def _attempts(self, tools: tuple[ToolSchema, ...]) -> Settled:
        """Up to ``max_tries`` tries; returns (outcome, label, reason)."""
        setup, memory = self.setup, self.memory
        if any(t.name == "vote" for t in tools):
            try:
                snapshot = await self.context.ask(
                    setup.coordinator, AnswersRequest(agent=setup.agent)
                )
            except ConclaveRuntimeError as exc:
                # The coordinator crashed on this request (and restarts): not this agent's
                # fault, so try anew with a fresh round rather than crash the actor.
                return "retry", None, f"no snapshot from the coordinator: {exc}"
            assert isinstance(snapshot, AnswersSnapshot)
            self._merge(snapshot.answers)
            memory.snapshot_visible = snapshot.visible
            memory.stale = False
        messages = round_messages(
            me=setup.anonymous_id,
            agents=setup.agents,
            task=memory.task,
            answers=sorted(memory.view.values(), key=lambda v: v.label),
            tools=[t.name for t in tools],
            persona=setup.persona,
        )
        memory.prompt_built = True
        last_error = ""
        tries = setup.orchestrator.max_tries_per_round
        for _ in range(tries):
            try:
                completion = await self._complete(messages, tools, "round")
            except Exception as exc:
                # Whatever the backend raised is a failed try: after the last one the agent
                # is excluded and the run goes on, never a crash that restarts it forever.
                last_error = _describe(exc)
                continue
            if memory.stale:
                return "stale", None, ""
            try:
                call = parse_workflow_call(completion.message, tools)
            except WorkflowError as exc:
                last_error = str(exc)
                messages = [*messages, *_feedback(completion.message, last_error)]
                continue
            if isinstance(call, NewAnswer):
                submission: SubmitAnswer | SubmitVote = SubmitAnswer(
                    agent=setup.agent, content=call.content, round=memory.round
                )
            else:
                submission = SubmitVote(
                    agent=setup.agent,
                    target=call.agent_id,
                    reason=call.reason,
                    seen=memory.snapshot_visible,
                    round=memory.round,
                )
            # While committing, updates mark the round stale instead of cancelling it, so a
            # submission the coordinator accepts is never forgotten. Only StopWork or shutdown
            # cancel it, and then coordination is over. No timeout: the coordinator is a
            # permanent actor whose mailbox outlives its crashes, so the request is answered or
            # fails as Undeliverable; a deadline per ask would cost more than it protects.
            memory.committing = True
            memory.submission = submission
            try:
                verdict = await self.context.ask(setup.coordinator, submission)
            except ConclaveRuntimeError as exc:
                memory.committing = False
                memory.submission = None
                last_error = f"the coordinator did not take the submission: {exc}"
                continue
            assert isinstance(verdict, AnswerVerdict)
            if verdict.accepted:
                return self._accepted(submission, verdict)
            if verdict.stale or memory.stale:
                return "stale", None, ""
            memory.committing = False
            memory.submission = None
            last_error = verdict.error or "rejected"
            messages = [*messages, *_feedback(completion.message, last_error)]
        return "failed", None, f"{tries} tries failed; last error: {last_error}"

    async def _commit(self, submission: SubmitAnswer | SubmitVote) -> Settled:
        """Submit again after a restart; anything but acceptance starts a fresh round (the
        conversation that led to the submission died with the previous incarnation)."""
        try:
            verdict = await self.context.ask(self.setup.coordinator, submission)
        except ConclaveRuntimeError as exc:
            return "retry", None, f"the coordinator did not take the submission: {exc}"
        assert isinstance(verdict, AnswerVerdict)
        if verdict.accepted:
            return self._accepted(submission, verdict)
        return ("stale" if verdict.stale else "retry"), None, verdict.error or ""

    def _accepted(self, submission: SubmitAnswer | SubmitVote, verdict: AnswerVerdict) -> Settled:
        assert verdict.label is not None
        if isinstance(submission, SubmitAnswer):
            self._merge((AnswerView(label=verdict.label, content=submission.content),))
            return "answered", verdict.label, ""
        return "voted", verdict.label, ""

    async def _complete(
        self, messages: list[ChatMessage], tools: tuple[ToolSchema, ...], purpose: str
    ) -> Completion:
        agent = self.setup.agent
        self.context.record(LlmRequestStarted(at=trio.current_time(), agent=agent, purpose=purpose))
        outcome = "cancelled"
        completion: Completion | None = None
        timeout = self.setup.orchestrator.round_timeout
        try:
            with trio.move_on_after(timeout if timeout is not None else float("inf")) as timer:
                completion = await self.backend.complete(
                    CompletionRequest(messages=tuple(messages), tools=tools)
                )
            outcome = "timeout" if timer.cancelled_caught else "ok"
        except Exception:
            outcome = "error"
            raise
        finally:
            usage = completion.usage if completion is not None else None
            self.context.record(
                LlmRequestFinished(
                    at=trio.current_time(),
                    agent=agent,
                    purpose=purpose,
                    outcome=outcome,
                    input_tokens=usage.input_tokens if usage else 0,
                    output_tokens=usage.output_tokens if usage else 0,
                )
            )
        if completion is None:
            raise _RoundTimeout(f"the model did not answer within {timeout:g}s")
        return completion

    async def _present(self, present: Present) -> None:
        """Write the presentation and reply to the latest request for it."""
        setup = self.setup
        messages = presentation_messages(
            me=setup.anonymous_id,
            strategy=present.strategy,
            task=present.task,
            own_label=present.own_label,
            answers=present.answers,
            persona=setup.persona,
        )
        reply = Presentation(content=None, error="")
        for _ in range(setup.orchestrator.max_tries_per_round):
            try:
                completion = await self._complete(messages, (), "present")
            except Exception as exc:
                reply = Presentation(content=None, error=_describe(exc))
                continue
            if completion.message.content.strip():
                reply = Presentation(content=completion.message.content)
                break
            reply = Presentation(content=None, error="the presentation was empty")
        request, self._presentation = self._presentation, None
        assert request is not None
        self.context.reply(request, reply)

    # -- helpers --------------------------------------------------------------------------

    def _merge(self, answers: tuple[AnswerView, ...]) -> bool:
        """Take answers into the view; True if any label was new to this agent."""
        new = False
        memory = self.memory
        for view in answers:
            author = view.label.split(".")[0]
            current = memory.view.get(author)
            if view.label not in memory.labels_seen:
                memory.labels_seen.add(view.label)
                new = True
            if (
                current is None
                or _label_seq(view.label) > _label_seq(current.label)
                or (current.label == view.label and current.truncated and not view.truncated)
            ):
                memory.view[author] = view
        return new

    def _set_status(self, status: AgentStatus, detail: str = "") -> None:
        if self.memory.status is status and not detail:
            return
        self.memory.status = status
        self.context.record(
            AgentStatusChanged(
                at=trio.current_time(), agent=self.setup.agent, status=status.value, detail=detail
            )
        )


class _RoundTimeout(Exception):
    pass


Settled = tuple[str, str | None, str]
"""How a round's work settled: (outcome, label, reason); see :class:`RoundSettled`."""


def _describe(exc: Exception) -> str:
    """A failed try's error as the agent reports it: the message of an error the backend
    is expected to raise, the type too for anything else (a bug worth seeing as such)."""
    if isinstance(exc, LLMError | _RoundTimeout):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _label_seq(label: str) -> int:
    return int(label.rpartition(".")[2] or 0)


def _feedback(message: ChatMessage, error: str) -> list[ChatMessage]:
    """The failed turn and the error, so the model's next try can correct itself."""
    turn = [ChatMessage(role="assistant", content=message.content, tool_calls=message.tool_calls)]
    if message.tool_calls:
        turn += [
            ChatMessage(role="tool", content=f"Error: {error}", tool_call_id=call.id)
            for call in message.tool_calls
        ]
    else:
        turn.append(ChatMessage(role="user", content=f"Error: {error}"))
    return turn
