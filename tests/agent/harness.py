"""One AgentActor against a stand-in coordinator, with a backend and tools the test scripts.

Run-level specs (tests/coordination) drive agents through a whole run; these look at one
agent's loop closely: the requests it sends, its transcript, what it does with tool calls,
streamed text, verdicts and updates. The stand-in coordinator (:class:`FakeCoordinator`)
accepts every submission unless the test queued another verdict on its :class:`Desk`, and
answers snapshot requests with the desk's answers.

Everything runs under ``autojump_clock``: backend and tool latencies cost no real time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.agent.actor import AgentActor, AgentMemory, AgentSetup
from conclave.actors.agent.transcript_log import TranscriptFile
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.protocol import (
    AgentFailed,
    AnswersRequest,
    AnswersSnapshot,
    AnswerUpdate,
    AnswerVerdict,
    AnswerView,
    Rejoin,
    Rejoined,
    StartTask,
    SubmitAnswer,
    SubmitVote,
    VotingOpen,
)
from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    ToolCall,
    ToolSchema,
    Usage,
)
from conclave.actors.run.faults import FaultPlan, with_faults
from conclave.actors.run.turn import Turn
from conclave.actors.tools.protocol import NO_TOOLS, ToolExecutor, ToolResult
from conclave.config.schema import OrchestratorConfig
from conclave.runtime import (
    Actor,
    ActorContext,
    ActorSystem,
    Address,
    Envelope,
    Restart,
    open_actor_system,
)
from tests.coordination.helpers import WaitingTap

COORDINATOR = Address("coordinator")
AGENT = "a"
ME = "agent1"
TASK = "Name three uses of a paperclip"

Reply = ChatMessage | Exception | Callable[[CompletionRequest], ChatMessage]


@attrs.define
class Desk:
    """What the stand-in coordinator was sent, and what it will answer."""

    verdicts: list[AnswerVerdict] = attrs.Factory(list)
    """Verdicts for the next submissions, in order; when empty, submissions are accepted."""
    answers: list[AnswerView] = attrs.Factory(list)
    """What a snapshot shows."""
    visible: int | None = None
    """A snapshot's ``visible``; ``None``: as many as ``answers``."""
    submissions: list[SubmitAnswer | SubmitVote] = attrs.Factory(list)
    failed: list[AgentFailed] = attrs.Factory(list)
    rejoins: list[Rejoin] = attrs.Factory(list)
    snapshots: int = 0


class FakeCoordinator(Actor):
    def __init__(self, context: ActorContext, desk: Desk) -> None:
        super().__init__(context)
        self.desk = desk

    async def handle(self, envelope: Envelope) -> None:
        desk, payload = self.desk, envelope.payload
        if isinstance(payload, SubmitAnswer | SubmitVote):
            desk.submissions.append(payload)
            if desk.verdicts:
                self.context.reply(envelope, desk.verdicts.pop(0))
                return
            if isinstance(payload, SubmitAnswer):
                given = sum(isinstance(s, SubmitAnswer) for s in desk.submissions)
                label = f"{ME}.{given}"
            else:
                label = f"{payload.target}.1"
            self.context.reply(envelope, AnswerVerdict(accepted=True, label=label))
        elif isinstance(payload, AnswersRequest):
            desk.snapshots += 1
            visible = len(desk.answers) if desk.visible is None else desk.visible
            snapshot = AnswersSnapshot(answers=tuple(desk.answers), visible=visible)
            self.context.reply(envelope, snapshot)
        elif isinstance(payload, AgentFailed):
            desk.failed.append(payload)
        elif isinstance(payload, Rejoin):
            desk.rejoins.append(payload)
            self.context.reply(envelope, Rejoined())


class FakeBackend:
    """Plays ``replies`` in order (a message, an exception to raise, or a function of the
    request), after ``latency`` seconds each, and keeps every request."""

    def __init__(self, replies: Sequence[Reply], *, latency: float = 1.0) -> None:
        self.replies = list(replies)
        self.latency = latency
        self.requests: list[CompletionRequest] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        await trio.sleep(self.latency)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        message = reply(request) if callable(reply) else reply
        return Completion(message=message, usage=Usage(input_tokens=10, output_tokens=5))


def transcript_entry(agent: str, round_: int, purpose: str, message: ChatMessage) -> dict[str, Any]:
    """``message`` as :func:`~actors.agent.transcript_log.read_transcripts` gives it back."""
    line: dict[str, Any] = {
        "agent": agent,
        "round": round_,
        "purpose": purpose,
        "role": message.role,
        "content": message.content,
    }
    if message.tool_calls:
        line["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        line["tool_call_id"] = message.tool_call_id
    if message.provider_state is not None:
        line["provider_state"] = message.provider_state
    return line


def call(name: str, call_id: str = "c1", **arguments: Any) -> ChatMessage:
    """An assistant reply making one tool call."""
    return ChatMessage(
        role="assistant",
        tool_calls=(ToolCall(id=call_id, name=name, arguments=json.dumps(arguments)),),
    )


def answer(
    content: str = "Hold paper; pick a lock; reset a router.", call_id: str = "c1"
) -> ChatMessage:
    return call("new_answer", call_id, content=content)


def vote(target: str = "agent2", call_id: str = "c1") -> ChatMessage:
    return call("vote", call_id, agent_id=target, reason="most complete")


class SlowTools:
    """One read-only tool, ``read``, that takes ``seconds`` and counts its calls."""

    def __init__(self, seconds: float = 2.0) -> None:
        self.seconds = seconds
        self.calls: list[ToolCall] = []

    def schemas(self) -> tuple[ToolSchema, ...]:
        return (ToolSchema(name="read", description="read a file", parameters={}, read_only=True),)

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        await trio.sleep(self.seconds)
        return ToolResult(ok=True, output=f"contents of {call.arguments}")


@attrs.frozen
class AgentRun:
    system: ActorSystem
    tap: WaitingTap
    desk: Desk
    memory: AgentMemory

    def start(self, task: str = TASK) -> None:
        self.system.tell_nowait(agent_address(AGENT), StartTask(task=task))

    def update(self, *answers: AnswerView) -> None:
        self.system.tell_nowait(agent_address(AGENT), AnswerUpdate(answers=answers))

    def voting_open(self) -> None:
        self.system.tell_nowait(agent_address(AGENT), VotingOpen())


AgentClass = Callable[..., AgentActor]


@asynccontextmanager
async def open_agent(
    backend: LLMBackend,
    *,
    tools: ToolExecutor = NO_TOOLS,
    history: tuple[Turn, ...] = (),
    transcript_path: Path | None = None,
    orchestrator: OrchestratorConfig | None = None,
    faults: FaultPlan | None = None,
    actor: AgentClass = AgentActor,
    halted: trio.Event | None = None,
) -> AsyncIterator[AgentRun]:
    """Agent ``a`` (anonymous ``agent1`` of two) and the stand-in coordinator; ``halted`` is
    its run's end (a fresh one: the run goes on)."""
    tap = WaitingTap()
    desk = Desk()
    memory = AgentMemory()
    setup = AgentSetup(
        agent=AGENT,
        anonymous_id=ME,
        agents=2,
        persona="",
        coordinator=COORDINATOR,
        orchestrator=orchestrator or OrchestratorConfig(),
        history=history,
        transcript=TranscriptFile(transcript_path) if transcript_path is not None else None,
        tools=tools,
        halted=trio.Event() if halted is None else halted,
    )
    async with open_actor_system(name="agent", taps=[tap]) as system:
        system.spawn(COORDINATOR, lambda ctx: FakeCoordinator(ctx, desk))

        def factory(ctx: ActorContext) -> Actor:
            return actor(ctx, setup=setup, backend=backend, memory=memory)

        system.spawn(agent_address(AGENT), with_faults(factory, faults), restart=Restart.TRANSIENT)
        yield AgentRun(system=system, tap=tap, desk=desk, memory=memory)
