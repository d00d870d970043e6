"""Sub-agents: a PAOR plan's delegated steps carried out by child actors of the agent.

:class:`SubAgents` is the driver's delegate (:class:`~actors.paor.budget.Delegate`). For each
delegated step it opens a :class:`SubAgent` under the asking actor's own supervisor
(:meth:`ActorContext.children <runtime.actor.ActorContext.children>`), so the sub-agents live
no longer than the agent's incarnation: a restarted or stopped agent has its sub-agents
stopped. The steps run in dependency order, the steps of one wave at once; each sub-agent is
asked for its step and the parent waits for the answer, a :class:`SubAgentReport` that
becomes an observation of the parent's iteration.

A sub-agent runs its own PAOR loop over its own transcript, with its share of the parent's
budget: an ``explore`` one with the read-only tools only, a ``worker`` one with the agent's
tools, delegating further while its depth is below ``paor.max_depth``.

A sub-agent that crashes is restarted by the supervisor (it is transient) and the ask that
monitored it fails; the parent asks the restarted one once more (it goes on from its
transcript, which its parent keeps). A second crash is reported: the step's observation says
the sub-agent crashed and its work is lost, and the parent goes on. Nothing is lost silently.

Cancellation: cancelling the delegate (the parent's round ends) cancels the waits; each
sub-agent still running is terminated (shielded, bounded), and the rest stop with the
agent's incarnation.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import trio

from conclave.actors.llm.protocol import ChatMessage, LLMBackend, ToolCall, ToolSchema
from conclave.actors.loop import LoopBudget, LoopObserver, Transcript
from conclave.actors.loop.engine import QUIET
from conclave.actors.paor.budget import Budget, SubAgentReport, SubAgentUsage, share
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.plan import Plan, PlanStep, SubAgentKind, waves
from conclave.actors.paor.prompts import PAOR_NOTE
from conclave.actors.paor.subagent_events import (
    SEPARATOR,
    RunSubTask,
    SubAgentFinished,
    SubAgentStarted,
    SubTaskDone,
)
from conclave.actors.paor.subagent_prompts import subtask_prompt
from conclave.actors.tools.protocol import ToolExecutor, ToolResult
from conclave.config.schema.paor import PaorConfig
from conclave.runtime import (
    Actor,
    ActorContext,
    ActorFactory,
    Address,
    Envelope,
    Restart,
    SupervisorSpec,
    Undeliverable,
)

__all__ = ["SUBAGENT", "ReadOnlyTools", "SubAgent", "SubAgentSetup", "SubAgents"]

SUBAGENT = "subagent"
"""The address kind of sub-agents; the key is the sub-agent's path."""
SUPERVISION = SupervisorSpec(intensity=10, period=5.0)
"""An agent's sub-agents' supervisor: many may run at once, so a few crashes close together
are restarts, not a reason to fail the agent."""
_STOP_BOUND = 10.0
"""Seconds a finished (or abandoned) sub-agent may take to stop."""


@attrs.frozen(kw_only=True)
class SubAgentSetup:
    """What every sub-agent of one agent shares."""

    agent: str
    """The run's agent they serve (their events name it)."""
    backend: LLMBackend
    tools: ToolExecutor
    """The agent's tools (an explore sub-agent is offered only the read-only ones)."""
    budget: LoopBudget
    """Each phase's steps and tries."""
    settings: PaorConfig
    observed: Callable[[str], LoopObserver] | None = None
    """Given a sub-agent's path, the observer that records its LLM calls under that path, as
    ``recorded`` does its tool calls; ``None``: they are not recorded."""
    wrap: Callable[[ActorFactory], ActorFactory] | None = None
    """Wraps each sub-agent's factory (fault injection in tests and chaos runs)."""
    recorded: Callable[[str, ToolExecutor], ToolExecutor] | None = None
    """Given a sub-agent's path and its tools, the tools whose calls are recorded under that
    path (``w1/1.look``), so the event log, replay and the timeline tell its calls from its
    parent's."""
    retries: int = 1
    """Asks made again of a sub-agent restarted after a crash, before it is reported."""


class ReadOnlyTools:
    """The read-only part of an executor: an explore sub-agent's tools."""

    def __init__(self, inner: ToolExecutor) -> None:
        self._inner = inner

    def schemas(self) -> tuple[ToolSchema, ...]:
        return tuple(s for s in self._inner.schemas() if s.read_only)

    def withheld(self) -> tuple[ToolSchema, ...]:
        """The agent's write tools: a call to one is refused (the model reads why), not a
        failed try."""
        writes = tuple(s for s in self._inner.schemas() if not s.read_only)
        return self._inner.withheld() + writes

    async def execute(self, call: ToolCall) -> ToolResult:
        offered = {s.name for s in self.schemas()}
        if call.name not in offered:
            names = ", ".join(sorted(offered)) or "none"
            return ToolResult(
                ok=False,
                refused=True,
                error=f"{call.name} is not offered: an explore sub-agent has only read-only "
                f"tools ({names})",
            )
        return await self._inner.execute(call)


class _Memory:
    """A sub-agent's state that outlives its incarnations, kept by its parent."""

    __slots__ = ("started", "transcript")

    def __init__(self) -> None:
        self.transcript: Transcript | None = None
        self.started: float | None = None


class SubAgent(Actor):
    """Carries out the step it is asked (:class:`RunSubTask`) and answers the report."""

    def __init__(
        self, context: ActorContext, setup: SubAgentSetup, path: str, memory: _Memory
    ) -> None:
        super().__init__(context)
        self._setup = setup
        self._path = path
        self._memory = memory

    async def handle(self, envelope: Envelope) -> None:
        if isinstance(envelope.payload, RunSubTask):
            self.context.start_soon(self._answer, envelope, envelope.payload)

    async def _answer(self, request: Envelope, task: RunSubTask) -> None:
        report = await self._carry_out(task)
        self.context.reply(request, SubTaskDone(report=report))

    async def _carry_out(self, task: RunSubTask) -> SubAgentReport:
        setup, memory = self._setup, self._memory
        if memory.started is None:
            memory.started = trio.current_time()
        if memory.transcript is None:
            prompt = subtask_prompt(task.agent_kind, task.task, task.context)
            memory.transcript = Transcript(
                [
                    ChatMessage(role="user", content=prompt),
                    ChatMessage(role="user", content=PAOR_NOTE),
                ]
            )
        transcript = memory.transcript
        explore = task.agent_kind is SubAgentKind.EXPLORE
        delegate = None
        if not explore and task.depth < setup.settings.max_depth:
            delegate = SubAgents(self.context, setup, parent=self._path, depth=task.depth)
        tools = ReadOnlyTools(setup.tools) if explore else setup.tools
        loop = PaorLoop(
            backend=setup.backend,
            tools=setup.recorded(self._path, tools) if setup.recorded is not None else tools,
            budget=setup.budget,
            settings=setup.settings,
            observer=setup.observed(self._path) if setup.observed is not None else QUIET,
            delegate=delegate,
            tokens=task.budget.tokens,
            seconds=_seconds_left(task.budget, memory.started),
        )
        outcome = await loop.run(transcript)
        seconds = trio.current_time() - memory.started
        own = SubAgentUsage(
            agent=self._path,
            agent_kind=task.agent_kind,
            step=task.step,
            end=outcome.end,
            tokens=transcript.tokens,
            seconds=seconds,
            llm_calls=transcript.steps,
            budget=task.budget,
        )
        return SubAgentReport(
            step=task.step,
            agent_kind=task.agent_kind,
            task=task.task,
            agent=self._path,
            end=outcome.end,
            summary=outcome.summary(),
            seconds=seconds,
            usage=(own, *(row for sub in outcome.subagents for row in sub.usage)),
        )


class SubAgents:
    """Runs a plan's delegated steps as sub-agents of the actor whose context it has."""

    def __init__(
        self, context: ActorContext, setup: SubAgentSetup, *, parent: str, depth: int = 0
    ) -> None:
        self._context = context
        self._setup = setup
        self._parent = parent
        self._depth = depth

    async def __call__(
        self, plan: Plan, iteration: int, left: Budget, fraction: float
    ) -> tuple[SubAgentReport, ...]:
        steps = plan.delegated
        each = share(left, fraction, len(steps))
        reports: dict[str, SubAgentReport] = {}
        order: list[str] = []
        for wave in waves(Plan(goal=plan.goal, steps=steps)):
            async with trio.open_nursery() as nursery:
                for step in wave:
                    order.append(step.id)
                    nursery.start_soon(self._one, step, iteration, each, reports)
        return tuple(reports[step_id] for step_id in order)

    async def _one(
        self,
        step: PlanStep,
        iteration: int,
        budget: Budget,
        reports: dict[str, SubAgentReport],
    ) -> None:
        assert step.delegate is not None
        setup = self._setup
        path = f"{self._parent}{SEPARATOR}{iteration}.{step.id}"
        address = Address(SUBAGENT, path)
        memory = _Memory()

        def factory(context: ActorContext) -> Actor:
            return SubAgent(context, setup, path, memory)

        children = self._context.children(SUPERVISION)
        children.spawn(
            address, setup.wrap(factory) if setup.wrap else factory, restart=Restart.TRANSIENT
        )
        found = "\n\n".join(f"Step {d}: {reports[d].summary}" for d in step.depends_on)
        request = RunSubTask(
            step=step.id,
            agent_kind=step.delegate,
            task=step.action,
            context=found,
            depth=self._depth + 1,
            budget=budget,
        )
        self._context.record(
            SubAgentStarted(
                at=trio.current_time(),
                agent=setup.agent,
                subagent=path,
                agent_kind=step.delegate,
                step=step.id,
                task=step.action,
                tokens=budget.tokens,
                seconds=budget.seconds,
            )
        )
        started = trio.current_time()
        try:
            report = await self._ask(address, request, memory, started)
        finally:
            with trio.move_on_after(_STOP_BOUND, shield=True):
                await children.terminate(address)
        reports[step.id] = report
        self._context.record(
            SubAgentFinished(
                at=trio.current_time(),
                agent=setup.agent,
                subagent=path,
                agent_kind=step.delegate,
                step=step.id,
                end=report.end,
                summary=report.summary,
                tokens=report.tokens,
                seconds=report.seconds,
                crashes=report.crashes,
            )
        )

    async def _ask(
        self, address: Address, request: RunSubTask, memory: _Memory, started: float
    ) -> SubAgentReport:
        """Ask until answered; a crash costs one of the retries, and past them it is
        reported as the step's result."""
        crashes = 0
        while True:
            try:
                done = await self._context.ask(address, request)
            except Undeliverable as exc:
                crashes += 1
                if crashes > self._setup.retries:
                    return _crashed(request, address.key, memory, started, crashes, str(exc))
                continue
            assert isinstance(done, SubTaskDone)
            return attrs.evolve(done.report, crashes=crashes)


def _seconds_left(budget: Budget, started: float) -> float | None:
    """What is left of a sub-agent's wall-time share: a restarted one goes on from its
    transcript, so the time its crashed incarnations took counts (its tokens are in the
    transcript and count already)."""
    if budget.seconds is None:
        return None
    return max(0.0, budget.seconds - (trio.current_time() - started))


def _crashed(
    request: RunSubTask, path: str, memory: _Memory, started: float, crashes: int, error: str
) -> SubAgentReport:
    transcript = memory.transcript
    seconds = trio.current_time() - started
    summary = (
        f"The {request.agent_kind.value} sub-agent for step {request.step} crashed {crashes} times "
        f"(it was restarted after each; last: {error}). Its work is lost: go on without it, "
        "or plan the step anew."
    )
    usage = SubAgentUsage(
        agent=path,
        agent_kind=request.agent_kind,
        step=request.step,
        end=None,
        tokens=transcript.tokens if transcript is not None else 0,
        seconds=seconds,
        llm_calls=transcript.steps if transcript is not None else 0,
        budget=request.budget,
    )
    return SubAgentReport(
        step=request.step,
        agent_kind=request.agent_kind,
        task=request.task,
        agent=path,
        end=None,
        summary=summary,
        seconds=seconds,
        crashes=crashes,
        usage=(usage,),
    )
