"""What an agent's round and presentation do: build the prompt, run the loop, submit.

A round is one :func:`~actors.loop.run_loop` over a transcript that lives in the agent's
memory, with the workflow terminal: the loop ends in exactly one ``new_answer`` or ``vote``
call, which goes to the coordinator. A rejected submission gets its error back as the call's
tool result and the loop is re-entered with the same transcript, so the round's tries keep
counting across the re-entries. A backend that cannot serve the agent at all (a bad key) ends
the round at once, and the agent is excluded. A prompt too long for the model is built again
once with shorter answer previews; after that an overflow is a failed try.

The presentation is the same loop with the text terminal: the reply's text is the final
answer. It has the agent's own tools (a presenter that merges workspaces writes its own),
and with ``write_access`` it first opens the writable context paths: grants, then its
sandbox remounted rw.

Answers reach the agent through :meth:`Rounds.seen`: with a workspace, each answer's
snapshot becomes readable and its view says where. A new answer's workspace is staged
(copied, in a worker thread) before it is submitted, for the coordinator to publish.

Cancellation: the round's scope belongs to the actor (the ``cancel`` policy, ``StopWork``);
a cancelled loop appends nothing for the step in progress, so the transcript in memory stays
whole and a restarted agent can go on from it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import lru_cache, partial

import trio

from conclave.actors.agent.asking import (
    AskingTerminal,
    AskingTools,
    answer_message,
    own_tools,
    reach,
)
from conclave.actors.agent.events import AnswersInjected
from conclave.actors.agent.memory import AgentMemory, AgentSetup
from conclave.actors.agent.policy import runs_paor
from conclave.actors.agent.progress_report import out_of_steps_report, submit_answer
from conclave.actors.agent.protocol import RoundOutcome
from conclave.actors.agent.round_tools import RoundTools
from conclave.actors.agent.settled import Settled
from conclave.actors.agent.telemetry import CallEvents, StreamEvents
from conclave.actors.agent.transcripts import Transcripts
from conclave.actors.coordination.label import Label
from conclave.actors.coordination.protocol import (
    AgentFailing,
    AnswersRequest,
    AnswersSnapshot,
    AnswerVerdict,
    AnswerView,
    Present,
    Presentation,
    SameAnswer,
    SubmitAnswer,
    SubmitVote,
)
from conclave.actors.coordination.workflow import NewAnswer, Vote, WorkflowTerminal
from conclave.actors.human.questions import Question
from conclave.actors.llm.errors import LLMError
from conclave.actors.llm.protocol import (
    CallOutcome,
    CallPurpose,
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    ToolChoice,
    ToolSchema,
)
from conclave.actors.llm.redaction import redact
from conclave.actors.loop import (
    Abort,
    CheckpointDecision,
    Inject,
    LoopBudget,
    LoopEnd,
    LoopObserver,
    LoopOutcome,
    TextTerminal,
    Transcript,
    run_loop,
)
from conclave.actors.loop.checkpoint import CONTINUE
from conclave.actors.prompts.coordination import (
    presentation_messages,
    round_messages,
    update_message,
)
from conclave.actors.tools.protocol import ToolExecutor
from conclave.config.schema import InFlightPolicy
from conclave.runtime import ActorContext, ConclaveRuntimeError

__all__ = ["Rounds", "Settled", "Work"]

SHORTER = 4
"""After a context overflow, answer previews are cut to a quarter of their length."""
_STALE_VOTE = "Newer answers exist; they follow. Look at them, then vote again or answer."


Work = Callable[[], Awaitable[Settled]]


class Rounds:
    """One incarnation's round and presentation work, over the agent's memory."""

    def __init__(
        self, context: ActorContext, setup: AgentSetup, backend: LLMBackend, memory: AgentMemory
    ) -> None:
        self.context = context
        self.setup = setup
        self.memory = memory
        self.backend = _Guarded(backend)
        self.stream = StreamEvents(context, setup.agent)
        self.transcripts = Transcripts(context, setup, memory)
        orchestrator = setup.orchestrator
        self.budget = _budget(
            orchestrator.max_steps_per_round,
            orchestrator.max_tries_per_round,
            orchestrator.call_timeout,
        )

    # -- rounds -----------------------------------------------------------------------------

    async def fresh(self, workflow: tuple[ToolSchema, ...], policy: InFlightPolicy) -> Settled:
        """A new round: look at the answers (a voter asks for a snapshot), then the loop."""
        setup, memory = self.setup, self.memory
        if any(t.name == "vote" for t in workflow):
            try:
                snapshot = await self.context.ask(
                    setup.coordinator, AnswersRequest(agent=setup.agent)
                )
            except ConclaveRuntimeError as exc:
                # The coordinator crashed on this request (and restarts): not this agent's
                # fault, so try anew with a fresh round rather than crash the actor.
                reason = f"no snapshot from the coordinator: {exc}"
                return Settled(outcome=RoundOutcome.RETRY, reason=reason)
            assert isinstance(snapshot, AnswersSnapshot)
            memory.merge(self.seen(snapshot.answers))
            memory.snapshot_visible = snapshot.visible
            memory.stale = False
        resumed = self.transcripts.take_resumed(CallPurpose.ROUND)
        if resumed is not None:
            memory.transcript = self.transcripts.resumed(resumed)
            memory.prompt_length = resumed.prompt_length
            memory.shown = {v.label for v in memory.view.values()}  # its prompt showed them
        else:
            prompt = self._round_prompt(workflow, short=False)
            memory.shown = {v.label for v in memory.view.values()}  # the prompt shows them all
            memory.transcript = self.transcripts.new(prompt, CallPurpose.ROUND)
            memory.prompt_length = len(prompt)
        memory.prompt_built = True
        return await self._run(workflow, policy)

    async def resume(self, workflow: tuple[ToolSchema, ...], policy: InFlightPolicy) -> Settled:
        """Go on with the round in memory (the previous incarnation crashed mid-round)."""
        return await self._run(workflow, policy)

    async def _run(self, workflow: tuple[ToolSchema, ...], policy: InFlightPolicy) -> Settled:
        if runs_paor(self.setup.loop, workflow):
            # PAOR and its sub-agents (some 40 modules) load with the first PAOR round, not
            # with every run: a run's start-up before its first request pays for them otherwise.
            from conclave.actors.agent.paor_round import paor_round

            return await paor_round(self, policy)
        memory = self.memory
        transcript = memory.transcript
        assert transcript is not None
        own = own_tools(self.setup, self.context, presenting=False)
        tools = RoundTools(workflow, own, context=self.context, agent=self.setup.agent)
        checkpoint = partial(self._checkpoint, policy)
        while True:
            if policy is InFlightPolicy.INJECT:
                self._inject(transcript)  # a (re-)entry's first step has no checkpoint
            outcome: LoopOutcome[NewAnswer | Vote | Question] = await run_loop(
                transcript,
                backend=self.backend,
                tools=tools,
                terminal=_ROUND_TERMINAL,
                budget=self.budget,
                checkpoint=checkpoint,
                observer=self.observer(),
                sink=self.stream,
                # Every step of a round calls a tool (its own, or the workflow call that ends
                # it): where the server takes it, a reply without one is never generated.
                tool_choice=ToolChoice.REQUIRED,
            )
            if outcome.end is LoopEnd.FINAL:
                value, reply = outcome.value, outcome.reply
                if isinstance(value, Question):
                    await self._answer_in_text(own, value, transcript)
                    continue
                assert value is not None and reply is not None
                settled = await self._submit(value, reply, transcript, policy)
            elif outcome.end is LoopEnd.CONTEXT_OVERFLOW and not memory.shortened:
                memory.shortened = True
                prompt = self._round_prompt(workflow, short=True)
                self.transcripts.reprompt(
                    transcript, prompt, memory.prompt_length, CallPurpose.ROUND
                )
                memory.prompt_length = len(prompt)
                continue
            elif outcome.end is LoopEnd.CONTEXT_OVERFLOW:
                settled = self._failed_try(transcript, outcome.error)
            elif outcome.end is LoopEnd.ABORTED:
                settled = Settled(outcome=RoundOutcome.STALE)
            elif outcome.end is LoopEnd.STEPS_EXHAUSTED and _answers(workflow):
                content = out_of_steps_report(transcript.messages, self.budget.max_steps)
                reason = f"the round used all {self.budget.max_steps} of its steps"
                settled = await submit_answer(self, content, "out-of-steps", policy, reason)
            else:
                settled = Settled(outcome=RoundOutcome.FAILED, reason=outcome.error)
            if settled is not None:
                return settled

    def observer(self, agent: str | None = None) -> LoopObserver:
        """A round's observer: its calls' events, recorded under ``agent`` (a sub-agent's
        path) or the agent's id, and the agent's health (its sub-agents' calls are its own)."""
        name = self.setup.agent if agent is None else agent
        return _Health(CallEvents(self.context, name, CallPurpose.ROUND), self._health)

    async def submit(
        self, call: NewAnswer | Vote, reply: ChatMessage, policy: InFlightPolicy
    ) -> Settled | None:
        """Submit a round's result (a PAOR round's summary); ``None``: it was refused and
        tries remain."""
        transcript = self.memory.transcript
        assert transcript is not None
        return await self._submit(call, reply, transcript, policy)

    def _health(self, error: str | None) -> None:
        """Tell the coordinator when this agent's calls start failing (and each failure
        after), and when one succeeds again: it stops waiting for an agent that keeps
        failing once the others are done."""
        if error is None and not self.memory.failing:
            return
        self.memory.failing = error is not None
        self.context.tell_nowait(
            self.setup.coordinator, AgentFailing(agent=self.setup.agent, error=error)
        )

    def _checkpoint(self, policy: InFlightPolicy, step: int) -> CheckpointDecision:
        """Between two steps: ``inject`` shows the answers that arrived meanwhile; with
        ``finish`` a round they made stale ends here (it re-runs once)."""
        if policy is InFlightPolicy.INJECT:
            updates = self.updates()
            return Inject(messages=updates) if updates else CONTINUE
        if self.memory.stale:
            return Abort(reason="newer answers arrived")
        return CONTINUE

    def updates(self) -> tuple[ChatMessage, ...]:
        """What an ``inject`` round is shown at a step boundary: the answers not in its
        transcript yet, as one message (none when nothing is new); they are marked shown."""
        unseen = self._unseen()
        return (update_message(unseen),) if unseen else ()

    def _unseen(self) -> list[AnswerView]:
        """The latest answers not shown in this round's transcript yet, now marked shown."""
        memory = self.memory
        unseen = sorted(
            (v for v in memory.view.values() if v.label not in memory.shown), key=_given_order
        )
        if unseen:
            memory.shown.update(v.label for v in unseen)
            self.context.record(
                AnswersInjected(
                    at=trio.current_time(),
                    agent=self.setup.agent,
                    round=memory.round,
                    labels=tuple(v.label for v in unseen),
                )
            )
        return unseen

    def _inject(self, transcript: Transcript) -> None:
        transcript.append(*self.updates())

    async def _submit(
        self,
        call: NewAnswer | Vote,
        reply: ChatMessage,
        transcript: Transcript,
        policy: InFlightPolicy,
    ) -> Settled | None:
        """Submit the loop's result; ``None``: the round goes on (its loop is re-entered)."""
        setup, memory = self.setup, self.memory
        if memory.stale:
            return Settled(outcome=RoundOutcome.STALE)
        submission: SubmitAnswer | SubmitVote
        if isinstance(call, NewAnswer):
            await self._stage()
            submission = SubmitAnswer(
                agent=setup.agent,
                content=call.content,
                round=memory.round,
                shown=tuple(sorted(memory.shown)),
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
            error = f"the coordinator did not take the submission: {exc}"
            transcript.append(*_results(reply, error))
            return self._failed_try(transcript, error)
        assert isinstance(verdict, AnswerVerdict)
        if verdict.accepted:
            return self._accepted(submission, verdict)
        if verdict.stale and policy is InFlightPolicy.INJECT:
            memory.committing = False
            memory.submission = None
            return await self._look_again(transcript, reply)
        if verdict.stale or memory.stale:
            return Settled(outcome=RoundOutcome.STALE)
        memory.committing = False
        memory.submission = None
        error = verdict.error or "rejected"
        transcript.append(*_results(reply, error))
        return self._failed_try(transcript, error)

    async def _look_again(self, transcript: Transcript, reply: ChatMessage) -> Settled | None:
        """A vote was stale in an ``inject`` round: show the newer answers and go on (no
        try lost, no work discarded)."""
        setup, memory = self.setup, self.memory
        try:
            snapshot = await self.context.ask(setup.coordinator, AnswersRequest(agent=setup.agent))
        except ConclaveRuntimeError:
            return Settled(outcome=RoundOutcome.STALE)
        assert isinstance(snapshot, AnswersSnapshot)
        memory.merge(self.seen(snapshot.answers))
        memory.snapshot_visible = snapshot.visible
        transcript.append(*_results(reply, _STALE_VOTE))
        self._inject(transcript)
        return None

    async def _stage(self) -> None:
        """Copy the workspace for the coordinator to publish with the answer. A copy that
        fails leaves the answer without a snapshot (its readers find no workspace), not the
        agent without its answer."""
        workspace = self.setup.workspace
        if workspace is None:
            return
        try:
            await workspace.stage()
        except OSError:
            return

    def seen(self, answers: tuple[AnswerView, ...]) -> tuple[AnswerView, ...]:
        """Answers shown to this agent: with a workspace, their snapshots become readable
        and each view says where its snapshot is."""
        workspace = self.setup.workspace
        return answers if workspace is None else workspace.see(answers)

    def _failed_try(self, transcript: Transcript, error: str) -> Settled | None:
        """Count a failed try the loop did not see; the round fails when they run out."""
        transcript.failed_tries += 1
        tries = self.budget.max_tries
        if transcript.failed_tries >= tries:
            reason = f"{tries} tries failed; last error: {error}"
            return Settled(outcome=RoundOutcome.FAILED, reason=reason)
        return None

    async def resubmit(self, submission: SubmitAnswer | SubmitVote) -> Settled:
        """Submit again after a restart; anything but acceptance starts a fresh round (the
        conversation that led to the submission is over)."""
        try:
            verdict = await self.context.ask(self.setup.coordinator, submission)
        except ConclaveRuntimeError as exc:
            reason = f"the coordinator did not take the submission: {exc}"
            return Settled(outcome=RoundOutcome.RETRY, reason=reason)
        assert isinstance(verdict, AnswerVerdict)
        if verdict.accepted:
            return self._accepted(submission, verdict)
        outcome = RoundOutcome.STALE if verdict.stale else RoundOutcome.RETRY
        return Settled(outcome=outcome, reason=verdict.error or "")

    def _accepted(self, submission: SubmitAnswer | SubmitVote, verdict: AnswerVerdict) -> Settled:
        assert verdict.label is not None
        if isinstance(submission, SubmitAnswer):
            # Its own answer, or the current answer it is the same as (then it counted as
            # this agent's vote): the text is the same either way.
            view = AnswerView(label=verdict.label, content=submission.content, order=verdict.order)
            self.memory.merge(self.seen((view,)))
            if verdict.same is None:
                return Settled(outcome=RoundOutcome.ANSWERED, label=verdict.label)
            self.memory.supported = True
            outcome = {
                SameAnswer.VOTE: RoundOutcome.VOTED,
                SameAnswer.PART: RoundOutcome.SAME_ANSWER,
            }
            return Settled(outcome=outcome[verdict.same], label=verdict.label)
        return Settled(outcome=RoundOutcome.VOTED, label=verdict.label)

    def _round_prompt(self, workflow: tuple[ToolSchema, ...], *, short: bool) -> list[ChatMessage]:
        setup, memory = self.setup, self.memory
        # In the order they were given: a new answer goes last, after the prefix that a
        # provider may have cached from an earlier prompt.
        answers = sorted(memory.view.values(), key=_given_order)
        if short:
            answers = [_shorter(v) for v in answers]
        return round_messages(
            me=setup.anonymous_id,
            agents=setup.agents,
            task=memory.task,
            answers=answers,
            tools=[t.name for t in workflow],
            persona=setup.persona,
            history=setup.history,
            mode=setup.mode,
            instructions=setup.instructions,
            workspace=setup.workspace.note() if setup.workspace is not None else None,
            act=reach(setup, presenting=False),
        )

    # -- presentation -----------------------------------------------------------------------

    async def present(self, present: Present) -> Presentation:
        """The final answer: the presentation loop's text, or why there is none."""
        setup = self.setup
        workspace = setup.workspace
        if present.write_access and workspace is not None:
            try:
                await workspace.open_context_writes(self.context)
            except Exception as exc:
                error = f"the context paths could not be opened for writing: {exc}"
                return Presentation(content=None, error=error)
        answers = self.seen(present.answers)
        own = own_tools(setup, self.context, presenting=True)
        tools = RoundTools((), own, context=self.context, agent=setup.agent)
        act = reach(setup, presenting=True)

        def prompt(answers: tuple[AnswerView, ...]) -> list[ChatMessage]:
            return presentation_messages(
                me=setup.anonymous_id,
                strategy=present.strategy,
                task=present.task,
                own_label=present.own_label,
                answers=answers,
                persona=setup.persona,
                history=setup.history,
                mode=setup.mode,
                instructions=setup.instructions,
                workspace=workspace.note() if workspace is not None else None,
                act=act,
            )

        resumed = self.transcripts.take_resumed(CallPurpose.PRESENT)
        if resumed is not None:
            transcript = self.transcripts.resumed(resumed)
            prompt_length = resumed.prompt_length
        else:
            first = prompt(answers)
            transcript = self.transcripts.new(first, CallPurpose.PRESENT)
            prompt_length = len(first)
        shortened = False
        while True:
            outcome: LoopOutcome[str | Question] = await run_loop(
                transcript,
                backend=self.backend,
                tools=tools,
                terminal=AskingTerminal(TextTerminal()),
                budget=self.budget,
                # The presenter is the last agent at work: a failing one has the
                # coordinator's failing_agent_grace, as a round's agent has.
                observer=_Health(
                    CallEvents(self.context, setup.agent, CallPurpose.PRESENT), self._health
                ),
                sink=self.stream,
                purpose=CallPurpose.PRESENT,
            )
            if outcome.end is LoopEnd.FINAL and isinstance(outcome.value, Question):
                await self._answer_in_text(own, outcome.value, transcript)
                continue
            if outcome.end is LoopEnd.FINAL:
                assert isinstance(outcome.value, str)
                return Presentation(content=outcome.value)
            if outcome.end is LoopEnd.CONTEXT_OVERFLOW and not shortened:
                shortened = True
                shorter = tuple(_shorter(v) for v in answers)
                self.transcripts.reprompt(
                    transcript, prompt(shorter), prompt_length, CallPurpose.PRESENT
                )
                continue
            if outcome.end is LoopEnd.CONTEXT_OVERFLOW:
                transcript.failed_tries += 1
                if transcript.failed_tries < self.budget.max_tries:
                    continue
                error = f"{self.budget.max_tries} tries failed; last error: {outcome.error}"
                return Presentation(content=None, error=error)
            return Presentation(content=None, error=outcome.error)

    # -- questions --------------------------------------------------------------------------

    async def _answer_in_text(
        self, own: ToolExecutor, question: Question, transcript: Transcript
    ) -> None:
        """A question the model wrote as text: ask it, and give the answer as the next
        user message (the reply that asked is in the transcript already)."""
        assert isinstance(own, AskingTools)  # only an asking terminal with ask_user finds one
        transcript.append(answer_message(await own.ask(question)))


@lru_cache(maxsize=16)
def _budget(max_steps: int, max_tries: int, call_timeout: float | None) -> LoopBudget:
    """A round's budget: frozen, so the agents of a run share one (its validators ran for
    every incarnation of every agent: 0.5 % of a 2,000-agent run's profile)."""
    return LoopBudget(max_steps=max_steps, max_tries=max_tries, call_timeout=call_timeout)


_ROUND_TERMINAL: AskingTerminal[NewAnswer | Vote] = AskingTerminal(WorkflowTerminal())
"""A round's terminal: it keeps no state, so every round of every agent shares it."""


def _results(reply: ChatMessage, error: str) -> list[ChatMessage]:
    """The tool results that answer ``reply``'s calls with ``error``."""
    return [
        ChatMessage(role="tool", content=f"Error: {error}", tool_call_id=call.id)
        for call in reply.tool_calls
    ]


def _answers(workflow: tuple[ToolSchema, ...]) -> bool:
    return any(t.name == "new_answer" for t in workflow)


def _given_order(view: AnswerView) -> tuple[int, Label]:
    return view.order, Label.parse(view.label)


def _shorter(view: AnswerView) -> AnswerView:
    return view.cut(max(1, len(view.content) // SHORTER))


class _Health:
    """A round's observer that also reports, through ``report``, each failed call (its
    error) and the first call that succeeds after one (``None``)."""

    def __init__(self, inner: LoopObserver, report: Callable[[str | None], None]) -> None:
        self._inner = inner
        self._report = report

    def call_started(self) -> None:
        self._inner.call_started()

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None:
        self._inner.call_finished(outcome, completion, error)
        if outcome is CallOutcome.OK:
            self._report(None)
        elif outcome is not CallOutcome.CANCELLED:
            self._report(redact(error or outcome.value))

    def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
        self._inner.try_failed(failed, tries, error, wait)


class _Guarded:
    """The agent's backend, with its bugs made failed tries named by their type: whatever a
    backend raises costs the agent a try (and, after the last, its place), never the run."""

    def __init__(self, inner: LLMBackend) -> None:
        self._inner = inner

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        try:
            return await self._inner.complete(request, sink=sink)
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(f"{type(exc).__name__}: {exc}") from exc
