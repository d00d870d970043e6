"""The PAOR driver: one agent's round as iterations of plan, act, observe and reflect.

Each phase is the one loop engine (:func:`actors.loop.run_loop`) over the round's
transcript, with the tools and terminal of the phase:

- Planning offers only ``submit_plan`` (``ToolTerminal``); a plan that does not hold
  together goes back to the model, as a failed try.
- Acting first runs the plan's delegated steps as sub-agents (the ``delegate``; see
  :mod:`actors.paor.subagents`), each with its share of what is left of the budget, and
  shows the model their reports. Then it offers the agent's own tools, through its executor
  (permissions, sandboxes and plan-mode rules apply unchanged), each call recorded; a reply
  without tool calls ends it. Running out of steps ends Acting too: Reflect sees what was
  done. A plan with only delegated steps makes no Act call.
- Observing makes no model call: the recorded results are shown to the model.
- Reflecting offers only ``reflect`` (``ToolTerminal``), and its answer picks the next
  phase: Complete, Planning again, AwaitingUser (the question goes through the run's
  question desk, so a headless run pauses as for any question), or Failed. Where the
  agent may not ask (a multi-agent answer round, whose agents record assumptions instead
  of asking), the question is recorded as an assumption and the round plans again, told
  to take the safest course.

Each phase gets the loop budget's steps and tries afresh (the transcript's counters carry
over the whole round, so each phase's budget is counted from where it starts). The round's
tokens (its own calls' and its sub-agents') and its wall time are bounded by ``tokens`` and
``seconds``: when either runs out the round ends ``budget_spent`` with its progress.

A round that goes on from a transcript holding iterations already (resumed after a pause, or
its actor restarted) reads them back (:mod:`actors.paor.earlier`): its iterations count on
from them, ``max_iterations`` included, and its summary reports them.

Cancellation: the round's scope cancels the phase in progress; the transcript stays whole
(see :func:`run_loop`), and no transition is recorded for the phase not finished.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import attrs
import trio

from conclave.actors.human.questions import Question
from conclave.actors.llm.protocol import (
    ChatMessage,
    CompletionSink,
    LLMBackend,
    ToolCall,
    ToolChoice,
    ToolSchema,
)
from conclave.actors.loop import (
    LoopBudget,
    LoopEnd,
    LoopObserver,
    TextTerminal,
    Transcript,
    run_loop,
)
from conclave.actors.loop.checkpoint import CONTINUE, Checkpoint, CheckpointDecision, Inject
from conclave.actors.loop.engine import QUIET
from conclave.actors.loop.terminals import ToolTerminal
from conclave.actors.paor.budget import Budget, Delegate, SubAgentReport
from conclave.actors.paor.earlier import earlier_iterations
from conclave.actors.paor.observe import Observation, RecordingTools, describe_observations
from conclave.actors.paor.plan import SUBMIT_PLAN, BadPlan, Plan, parse_plan
from conclave.actors.paor.reflect import REFLECT, BadReflection, Reflection, parse_reflection
from conclave.actors.paor.report import PaorEnd, PaorOutcome
from conclave.actors.paor.state import OnMove, PaorMachine, PaorPhase
from conclave.actors.tools.protocol import ToolExecutor, ToolResult
from conclave.config.schema.paor import PaorConfig

__all__ = ["STUCK_AFTER", "Ask", "Assume", "Corrected", "PaorLoop", "Updates"]

Ask = Callable[[Question], Awaitable[str]]
"""Puts a question to the user and returns what the model should read back."""
Assume = Callable[[Question], str]
"""Records a question that may not be asked as an assumption (a multi-agent answer round)
and returns what the model should read back: go on with the safest course."""
Corrected = Callable[[int, int], list[str]]
"""Takes the user's corrections that arrived, given the iteration and the step."""
Updates = Callable[[], tuple[ChatMessage, ...]]
"""What the round shows at a step boundary besides corrections: the peers' answers that
arrived meanwhile (the ``inject`` in-flight policy), as free rounds are shown them."""

_ACT = (
    "Plan accepted. Act on it now: call the tools its steps name, in dependency order. "
    "When the steps are done, reply with a short note of what you did, without a tool call."
)
_REPLAN = (
    "You are stuck: the last iterations repeated the same calls and got the same results. "
    "Make a different plan; do not repeat those calls."
)
STUCK_AFTER = 3
"""Iterations running with the same calls and outputs that make a round stuck."""
_REFLECT = "Now call reflect: is the goal achieved, what is done, what is left, are you stuck?"


class _Only:
    """Offers one tool, whose call ends the phase (the terminal takes it; never executed)."""

    def __init__(self, schema: ToolSchema) -> None:
        self._schemas = (schema,)

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        return ToolResult(ok=False, error=f"{call.name} ends the phase; call it alone")


class _Failed(Exception):
    def __init__(self, error: str, *, budget_spent: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.budget_spent = budget_spent


class PaorLoop:
    """Runs one round's iterations; see the module docstring."""

    def __init__(
        self,
        *,
        backend: LLMBackend,
        tools: ToolExecutor,
        budget: LoopBudget,
        settings: PaorConfig,
        on_move: OnMove | None = None,
        ask: Ask | None = None,
        assume: Assume | None = None,
        observer: LoopObserver = QUIET,
        sink: CompletionSink | None = None,
        corrections: Corrected | None = None,
        updates: Updates | None = None,
        delegate: Delegate | None = None,
        tokens: int | None = None,
        seconds: float | None = None,
    ) -> None:
        self._backend = backend
        self._tools = RecordingTools(tools)
        self._budget = budget
        self._settings = settings
        self._on_move = on_move
        self._machine = PaorMachine(on_move)
        self._ask = ask
        self._assume = assume
        self._observer = observer
        self._sink = sink
        self._plans: list[Plan] = []
        self._reflections: list[Reflection] = []
        self._observations: list[tuple[Observation, ...]] = []
        self._corrections = corrections
        self._updates = updates
        self._corrected = False
        """A correction arrived since the last plan: the goal is not achieved before a plan
        accounts for it."""
        self._replanned = False
        """Whether the one forced replan a stuck round gets was spent."""
        self._delegate = delegate
        self._subagents: list[SubAgentReport] = []
        self._tokens = tokens
        self._seconds = seconds
        self._deadline = math.inf

    async def run(self, transcript: Transcript) -> PaorOutcome:
        """Iterate until the goal is achieved, the user is needed and cannot be asked, the
        iterations or the budget run out, or an error ends the round. A transcript that
        holds iterations already (a resumed round's) goes on counting from them."""
        earlier = earlier_iterations(transcript.messages)
        self._machine = PaorMachine(self._on_move, iteration=earlier.iterations)
        self._plans = list(earlier.plans)
        self._reflections = list(earlier.reflections)
        self._observations = list(earlier.observations)
        if earlier.iterations >= self._settings.max_iterations:
            # Resumed after its last iteration asked the user: the answer would have ended
            # the round there (see _iterate), so it ends here, with no iteration past it.
            return self._outcome(PaorEnd.MAX_ITERATIONS)
        seconds = math.inf if self._seconds is None else self._seconds
        self._deadline = trio.current_time() + seconds
        with trio.move_on_at(self._deadline):
            return await self._iterate(transcript)
        if not self._machine.ended:
            self._machine.move(PaorPhase.FAILED)
        return self._outcome(PaorEnd.BUDGET_SPENT, f"its {seconds:g} s of wall time ran out")

    async def _iterate(self, transcript: Transcript) -> PaorOutcome:
        machine = self._machine
        try:
            while True:
                machine.move(PaorPhase.PLANNING)
                self._bring_in(transcript)
                self._plans.append(await self._plan(transcript))
                # The accepted plan was made with every correction brought in so far in view
                # (one that came while planning too: it entered before the plan's call).
                self._corrected = False
                machine.move(PaorPhase.ACTING)
                await self._act(transcript)
                machine.move(PaorPhase.OBSERVING)
                seen = self._tools.take()
                self._observations.append(seen)
                transcript.append(
                    ChatMessage(role="user", content=f"{describe_observations(seen)}\n{_REFLECT}")
                )
                machine.move(PaorPhase.REFLECTING)
                reflection = await self._reflect(transcript)
                self._reflections.append(reflection)
                if machine.iteration < self._settings.max_iterations:
                    # One that came during the reflection still counts. On the last
                    # iteration no plan is left to follow it: it stays in the box for the
                    # agent's next PAOR round (or is reported unused), rather than taken here.
                    self._bring_in(transcript)
                if reflection.goal_achieved and not self._corrected:
                    machine.move(PaorPhase.COMPLETE)
                    return self._outcome(PaorEnd.GOAL_ACHIEVED)
                question = reflection.needs_user
                if not question and self._stuck(reflection):
                    if not self._replanned:
                        self._replanned = True
                        transcript.append(ChatMessage(role="user", content=_REPLAN))
                    else:
                        question = _stuck_question(reflection)
                if question and self._assume is not None:
                    said = self._assume(Question(question=question))
                    transcript.append(ChatMessage(role="user", content=said))
                elif question and machine.iteration >= self._settings.max_iterations:
                    # No iteration is left to use an answer: the person is not asked for
                    # one the round would throw away; the question is what is left.
                    machine.move(PaorPhase.FAILED)
                    return self._outcome(
                        PaorEnd.MAX_ITERATIONS, f"it needs the user to answer: {question}"
                    )
                elif question:
                    machine.move(PaorPhase.AWAITING_USER)
                    if self._ask is None:
                        machine.move(PaorPhase.FAILED)
                        return self._outcome(PaorEnd.NEEDS_USER, question)
                    answer = await self._ask(Question(question=question))
                    transcript.append(ChatMessage(role="user", content=answer))
                if machine.iteration >= self._settings.max_iterations:
                    machine.move(PaorPhase.FAILED)
                    return self._outcome(PaorEnd.MAX_ITERATIONS)
        except _Failed as failed:
            machine.move(PaorPhase.FAILED)
            end = PaorEnd.BUDGET_SPENT if failed.budget_spent else PaorEnd.FAILED
            return self._outcome(end, failed.error)

    def _arrived(self, transcript: Transcript) -> tuple[ChatMessage, ...]:
        """What arrived since the last step boundary, as the messages that bring it in: the
        peers' new answers, then the user's corrections."""
        arrived = self._updates() if self._updates is not None else ()
        if self._corrections is None:
            return arrived
        texts = self._corrections(self._machine.iteration, transcript.steps)
        if not texts:
            return arrived
        self._corrected = True
        return (*arrived, ChatMessage(role="user", content=_correction(texts)))

    def _bring_in(self, transcript: Transcript) -> None:
        """At a phase's start (before its first step, where the loop has no checkpoint)."""
        transcript.append(*self._arrived(transcript))

    def _checkpoint(self, transcript: Transcript) -> Checkpoint:
        """Between two steps of a phase (the transcript is whole): what arrived enters."""

        def between(_step: int) -> CheckpointDecision:
            arrived = self._arrived(transcript)
            return Inject(messages=arrived) if arrived else CONTINUE

        return between

    def _stuck(self, reflection: Reflection) -> bool:
        """Whether the model says it is stuck, or its last :data:`STUCK_AFTER` iterations
        made the same calls, with the same arguments, and got the same outputs."""
        if reflection.stuck:
            return True
        recent = self._observations[-STUCK_AFTER:]
        if len(recent) < STUCK_AFTER or not recent[0]:
            return False
        first = [seen.key for seen in recent[0]]
        return all([seen.key for seen in other] == first for other in recent[1:])

    def _outcome(self, end: PaorEnd, error: str = "") -> PaorOutcome:
        return PaorOutcome(
            end=end,
            iterations=self._machine.iteration,
            plans=tuple(self._plans),
            reflections=tuple(self._reflections),
            observations=tuple(self._observations),
            error=error,
            subagents=tuple(self._subagents),
        )

    def _phase_budget(self, transcript: Transcript) -> LoopBudget:
        """The loop budget, counted from where this phase starts."""
        budget = self._budget
        if self._tokens is not None:
            # The loop counts this transcript's tokens; the sub-agents' are charged here.
            own = max(1, self._tokens - sum(report.tokens for report in self._subagents))
            if budget.max_tokens is not None:
                own = min(own, budget.max_tokens)
            budget = attrs.evolve(budget, max_tokens=own)
        return attrs.evolve(
            budget,
            max_steps=transcript.steps + budget.max_steps,
            max_tries=transcript.failed_tries + budget.max_tries,
        )

    async def _final_call(
        self, transcript: Transcript, schema: ToolSchema, budget: LoopBudget
    ) -> ToolCall:
        """Run the loop until the model calls ``schema`` (alone); the call, still to be
        answered with its tool result."""
        self._bring_in(transcript)
        outcome = await run_loop(
            transcript,
            backend=self._backend,
            tools=_Only(schema),
            terminal=ToolTerminal(schema.name),
            budget=budget,
            checkpoint=self._checkpoint(transcript),
            observer=self._observer,
            sink=self._sink,
            tool_choice=ToolChoice.REQUIRED,
        )
        if outcome.end is not LoopEnd.FINAL:
            raise _Failed(outcome.error, budget_spent=outcome.end is LoopEnd.TOKEN_BUDGET)
        assert isinstance(outcome.value, ToolCall)
        return outcome.value

    async def _plan(self, transcript: Transcript) -> Plan:
        offered = frozenset(t.name for t in self._tools.schemas())
        budget = self._phase_budget(transcript)
        while True:
            call = await self._final_call(transcript, SUBMIT_PLAN, budget)
            try:
                plan = parse_plan(call.arguments, offered, may_delegate=self._delegate is not None)
            except BadPlan as exc:
                _refused(transcript, call, str(exc), budget)
                continue
            transcript.append(_result(call, f"{_ACT}\nIn dependency order:\n{plan.describe()}"))
            return plan

    async def _act(self, transcript: Transcript) -> None:
        plan = self._plans[-1]
        if plan.delegated and self._delegate is not None:
            await self._run_delegated(plan, transcript)
            if not plan.own:
                return
        self._bring_in(transcript)
        outcome = await run_loop(
            transcript,
            backend=self._backend,
            tools=self._tools,
            terminal=TextTerminal(),
            budget=self._phase_budget(transcript),
            checkpoint=self._checkpoint(transcript),
            observer=self._observer,
            sink=self._sink,
        )
        if outcome.end not in (LoopEnd.FINAL, LoopEnd.STEPS_EXHAUSTED):
            raise _Failed(outcome.error, budget_spent=outcome.end is LoopEnd.TOKEN_BUDGET)

    async def _run_delegated(self, plan: Plan, transcript: Transcript) -> None:
        """The plan's delegated steps, by sub-agents with their shares of what is left;
        their reports are observations, and the model is shown them before it acts."""
        assert self._delegate is not None
        spent = transcript.tokens + sum(report.tokens for report in self._subagents)
        left = Budget(
            tokens=None if self._tokens is None else max(0, self._tokens - spent),
            seconds=None
            if self._seconds is None
            else max(0.0, self._deadline - trio.current_time()),
        )
        reports = await self._delegate(
            plan, self._machine.iteration, left, self._settings.subagent_share
        )
        self._subagents.extend(reports)
        for report in reports:
            self._tools.observe(report.observation())
        if plan.own:
            seen = tuple(report.observation() for report in reports)
            heading = "What your sub-agents reported (now carry out your own steps)"
            transcript.append(
                ChatMessage(role="user", content=describe_observations(seen, heading=heading))
            )

    async def _reflect(self, transcript: Transcript) -> Reflection:
        budget = self._phase_budget(transcript)
        while True:
            call = await self._final_call(transcript, REFLECT, budget)
            try:
                reflection = parse_reflection(call.arguments)
            except BadReflection as exc:
                _refused(transcript, call, str(exc), budget)
                continue
            transcript.append(_result(call, "Noted."))
            return reflection


def _refused(transcript: Transcript, call: ToolCall, error: str, budget: LoopBudget) -> None:
    """A final call whose arguments were wrong: the error is its result, and a failed try;
    the phase fails when its tries run out."""
    transcript.append(_result(call, f"Error: {error}"))
    transcript.failed_tries += 1
    if transcript.failed_tries >= budget.max_tries:
        raise _Failed(f"the tries ran out; last error: {error}")


def _correction(texts: list[str]) -> str:
    said = "\n".join(f"- {text}" for text in texts)
    return (
        f"Correction from the user:\n{said}\n"
        "Your next plan must account for it; it overrides what it contradicts."
    )


def _stuck_question(reflection: Reflection) -> str:
    """What the user is asked when a round is stuck after its forced replan."""
    return (
        f"I am stuck and a new plan did not help. So far: {reflection.progress} "
        "What other approach should I take?"
    )


def _result(call: ToolCall, content: str) -> ChatMessage:
    return ChatMessage(role="tool", content=content, tool_call_id=call.id)
