"""The interactive agent: a conversation with the person that launches runs when it must.

One :class:`InteractiveSession` per conversation. Each :meth:`~InteractiveSession.turn` appends
the person's message to the agent's transcript and runs the one tool loop
(:func:`actors.loop.run_loop`) with a :class:`~actors.loop.TextTerminal`: a reply without tool
calls is the agent's answer. The agent is offered ``launch_run`` and nothing else (never a
coordination tool); a call goes to the :class:`~actors.interactive.launcher.RunLauncher`, and
its outcome (or, for a call that cannot run, the error) comes back as the tool's result, so
the agent reads what the run found and answers the person in the same turn.

The transcript (system prompt first) lives as long as the session: every turn sees the whole
conversation, launched runs' results included. A turn that fails (the model cannot be
reached, tries run out) leaves its message in the transcript and says why; the conversation
goes on. Cancelling a turn (Ctrl+C) cancels the launched run through its driver and drops the
turn's unfinished step (the loop appends nothing for it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.interactive.launcher import RunLauncher
from conclave.actors.interactive.outcome import LaunchOutcome
from conclave.actors.llm.protocol import (
    CallOutcome,
    ChatMessage,
    Completion,
    CompletionSink,
    LLMBackend,
    ToolCall,
    ToolSchema,
)
from conclave.actors.loop import LoopBudget, LoopEnd, TextTerminal, Transcript, run_loop
from conclave.actors.prompts.interactive import AgentLine, interactive_system_prompt
from conclave.actors.prompts.workspace import ContextAccess, ContextNote, WorkspaceNote
from conclave.actors.run.turn import Turn
from conclave.actors.tools.protocol import ToolResult
from conclave.config.launch import LAUNCH_PARAMETERS, LaunchError, read_launch
from conclave.config.schema import AgentConfig, ConclaveConfig
from conclave.config.schema.interactive import InteractiveModeConfig

__all__ = [
    "INTERACTIVE_AGENT_ID",
    "LAUNCH_RUN",
    "BeforeLaunch",
    "InteractiveReply",
    "InteractiveSession",
    "LaunchTool",
    "interactive_agent",
    "workspace_note",
]

INTERACTIVE_AGENT_ID = "interactive"

LAUNCH_RUN = ToolSchema(
    name="launch_run",
    description=(
        "Launch a run of the configured agents on a task and wait for its result: the final "
        "answer, the workspace path and a coordination summary. The person may be asked to "
        "approve it first; if they cancel, the result says so."
    ),
    parameters=LAUNCH_PARAMETERS,
)

BeforeLaunch = Callable[[ToolCall, ToolSchema, Mapping[str, Any]], Awaitable[str | None]]
"""Asked before a ``launch_run`` call runs, as an executor asks its ``before_call`` hook (the
:class:`~actors.human.tool_approval.ToolApprovalGate` of :mod:`actors.interactive.approval`):
a refusal reason for the agent, or ``None``."""

_TURN_BUDGET = LoopBudget(max_steps=8, max_tries=3)
"""A turn's steps: a model that keeps launching runs is stopped after a few."""


def workspace_note(config: ConclaveConfig, cwd: Path) -> WorkspaceNote:
    """Where the user works, as the agent's prompt says it: ``cwd`` (a project's root, in a
    project) and the configured context paths with what the runs' agents may do there (a
    writable one is written by the final presentation)."""
    contexts = tuple(
        ContextNote(
            path=str(c.path),
            access=ContextAccess.WRITABLE_LATER if c.writable else ContextAccess.READ_ONLY,
            protected=tuple(str(p) for p in c.protected),
        )
        for c in config.orchestrator.context_paths
    )
    return WorkspaceNote(workspace=str(cwd), context_paths=contexts)


def interactive_agent(config: ConclaveConfig, settings: InteractiveModeConfig) -> AgentConfig:
    """The interactive agent as an agent of the pool: ``settings.backend``, else the first
    agent's backend."""
    first = config.agents[0]
    return AgentConfig(
        id=INTERACTIVE_AGENT_ID,
        persona="Conclave's interactive agent",
        backend=settings.backend if settings.backend is not None else first.backend,
    )


@attrs.frozen(kw_only=True)
class InteractiveReply:
    """What one turn produced."""

    text: str | None
    """The agent's answer; ``None`` when the turn failed (``error`` says why)."""
    outcomes: tuple[LaunchOutcome, ...] = ()
    """The runs the turn launched (or that were cancelled before starting), in order."""
    error: str = ""
    input_tokens: int | None = None
    """The turn's last call's input tokens as its server reported them (what automatic
    compaction compares with its threshold); ``None`` when none was reported."""


class LaunchTool:
    """The agent's tool executor: ``launch_run`` only, each call asking ``before_call`` first
    (the session's permission rules and approval gate). Each outcome is also kept for the
    turn's reply."""

    def __init__(self, launcher: RunLauncher, *, before_call: BeforeLaunch | None = None) -> None:
        self.launcher = launcher
        self.before_call = before_call
        self.outcomes: list[LaunchOutcome] = []

    def schemas(self) -> tuple[ToolSchema, ...]:
        return (LAUNCH_RUN,)

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        if call.name != LAUNCH_RUN.name:
            return ToolResult(ok=False, error=f"no tool {call.name!r}; the only tool is launch_run")
        try:
            arguments: Any = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolResult(ok=False, error=f"the arguments are not JSON ({exc}); send an object")
        if not isinstance(arguments, dict):
            return ToolResult(ok=False, error="the arguments must be a JSON object")
        if self.before_call is not None:
            refusal = await self.before_call(call, LAUNCH_RUN, arguments)
            if refusal is not None:
                error = f"the call to {call.name} was refused: {refusal}"
                return ToolResult(ok=False, refused=True, error=error)
        try:
            outcome = await self.launcher.launch(read_launch(arguments))
        except LaunchError as exc:
            return ToolResult(ok=False, error=f"launch_run: {exc}")
        self.outcomes.append(outcome)
        return ToolResult(ok=True, output=json.dumps(outcome.to_json(), ensure_ascii=False))


def _history_messages(history: Sequence[Turn]) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for turn in history:
        messages += (
            ChatMessage(role="user", content=turn.task),
            ChatMessage(role="assistant", content=turn.final_answer),
        )
    return messages


class _LastCall:
    """Keeps the input tokens of the last call whose server reported usage."""

    def __init__(self) -> None:
        self.input_tokens: int | None = None

    def call_started(self) -> None:
        return None

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None:
        if completion is not None and completion.usage is not None:
            self.input_tokens = completion.usage.input_tokens or self.input_tokens

    def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
        return None


class InteractiveSession:
    """See the module docstring."""

    def __init__(
        self,
        *,
        config: ConclaveConfig,
        settings: InteractiveModeConfig,
        backend: LLMBackend,
        launcher: RunLauncher,
        workspace: WorkspaceNote | None = None,
        history: Sequence[Turn] = (),
        on_message: Callable[[Sequence[ChatMessage]], None] | None = None,
        before_call: BeforeLaunch | None = None,
    ) -> None:
        self.settings = settings
        self.before_call = before_call
        """Asked before each of the agent's own calls (:mod:`actors.interactive.approval`);
        ``None``: they run unasked."""
        self.backend = backend
        self.launcher = launcher
        project = launcher.project
        system = interactive_system_prompt(
            agents=[AgentLine(id=a.id, persona=a.persona) for a in config.agents],
            workspace=workspace,
            project=project.note() if project is not None else None,
            instructions=settings.append_system_prompt,
        )
        self.transcript = Transcript(
            [ChatMessage(role="system", content=system), *_history_messages(history)],
            on_append=on_message,
        )

    @property
    def system_prompt(self) -> str:
        return self.transcript.messages[0].content

    def restart(self, history: Sequence[Turn]) -> None:
        """Go on from ``history`` (a resumed or compacted conversation: each turn a message
        and its answer) instead of the transcript so far; the system prompt stays."""
        system = self.transcript.messages[0]
        self.transcript.messages[:] = [system, *_history_messages(history)]

    async def turn(self, text: str, *, sink: CompletionSink | None = None) -> InteractiveReply:
        """The agent's answer to ``text``, with any runs it launched on the way."""
        transcript = self.transcript
        transcript.append(ChatMessage(role="user", content=text))
        transcript.steps = transcript.failed_tries = 0  # each turn has its own budget
        tool = LaunchTool(self.launcher, before_call=self.before_call)
        calls = _LastCall()
        outcome = await run_loop(
            transcript,
            backend=self.backend,
            tools=tool,
            terminal=TextTerminal(),
            budget=_TURN_BUDGET,
            sink=sink,
            observer=calls,
        )
        spent = calls.input_tokens
        if outcome.end is LoopEnd.FINAL:
            assert outcome.value is not None
            return InteractiveReply(
                text=outcome.value, outcomes=tuple(tool.outcomes), input_tokens=spent
            )
        return InteractiveReply(
            text=None,
            outcomes=tuple(tool.outcomes),
            error=outcome.error or outcome.end.value,
            input_tokens=spent,
        )
