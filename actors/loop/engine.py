"""``run_loop``: the one LLM tool loop every part of Conclave runs.

A step is one LLM call. The terminal judges the reply: final, a contract violation (the
error goes back to the model and counts as a failed try), or tool calls to run. Tool calls
run read-only ones concurrently (consecutive read-only calls form one concurrent batch) and
the others one after another, in call order; their results are appended in call order as
``tool`` messages, then the next step is taken. The loop ends when the terminal says a reply
is final, or when a budget runs out, or when a checkpoint aborts it.

Cancellation: a cancelled loop appends nothing for the step in progress. The assistant
reply and its tool results are appended together, after every call of the step has
finished, so the transcript never holds a tool call without its result.
"""

from __future__ import annotations

import enum
import math
from typing import Generic, Protocol, TypeVar

import attrs
import trio

from actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    LLMBackend,
    LLMError,
    ToolCall,
    ToolSchema,
)
from actors.loop.budget import LoopBudget
from actors.loop.checkpoint import Abort, Checkpoint, Inject
from actors.loop.terminals import Final, Proceed, Terminal, Violation
from actors.loop.transcript import Transcript
from actors.tools.protocol import ToolExecutor, ToolResult

__all__ = ["CallOutcome", "LoopEnd", "LoopObserver", "LoopOutcome", "feedback", "run_loop"]

T = TypeVar("T")


class LoopEnd(enum.Enum):
    FINAL = "final"
    TRIES_EXHAUSTED = "tries_exhausted"
    STEPS_EXHAUSTED = "steps_exhausted"
    TIME_LIMIT = "time_limit"
    TOKEN_BUDGET = "token_budget"
    ABORTED = "aborted"


class CallOutcome(enum.Enum):
    """How one LLM call ended, as the ``LlmRequestFinished`` event reports it."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@attrs.frozen(kw_only=True)
class LoopOutcome(Generic[T]):
    end: LoopEnd
    value: T | None = None
    """The terminal's value when ``end`` is ``FINAL``."""
    reply: ChatMessage | None = None
    """The final reply when ``end`` is ``FINAL``."""
    error: str = ""
    """Why the loop ended otherwise: the last failed try, or the budget that ran out."""


class LoopObserver(Protocol):
    """Hears about each LLM call, to record events and count cost."""

    def call_started(self) -> None: ...

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None: ...


class _Quiet:
    def call_started(self) -> None:
        return None

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None:
        return None


_QUIET = _Quiet()


async def run_loop(
    transcript: Transcript,
    *,
    backend: LLMBackend,
    tools: ToolExecutor,
    terminal: Terminal[T],
    budget: LoopBudget,
    checkpoint: Checkpoint | None = None,
    observer: LoopObserver = _QUIET,
) -> LoopOutcome[T]:
    """Run steps until the terminal accepts a reply or a budget runs out.

    ``transcript`` is extended in place and its counters carry over between calls, so a
    caller may re-enter with the same transcript (after appending feedback) and the
    budgets count the whole round. ``budget.round_time_limit`` counts from this call.
    """
    limit = budget.round_time_limit
    with trio.move_on_after(math.inf if limit is None else limit) as timer:
        outcome = await _steps(transcript, backend, tools, terminal, budget, checkpoint, observer)
    if timer.cancelled_caught:
        return LoopOutcome(
            end=LoopEnd.TIME_LIMIT, error=f"the round took longer than its limit of {limit:g}s"
        )
    return outcome


async def _steps(
    transcript: Transcript,
    backend: LLMBackend,
    tools: ToolExecutor,
    terminal: Terminal[T],
    budget: LoopBudget,
    checkpoint: Checkpoint | None,
    observer: LoopObserver,
) -> LoopOutcome[T]:
    first = True
    last_error = ""
    while True:
        if transcript.failed_tries >= budget.max_tries:
            return LoopOutcome(
                end=LoopEnd.TRIES_EXHAUSTED,
                error=f"{budget.max_tries} tries failed; last error: {last_error}",
            )
        if transcript.steps >= budget.max_steps:
            return LoopOutcome(
                end=LoopEnd.STEPS_EXHAUSTED,
                error=f"the round used all {budget.max_steps} of its steps without finishing",
            )
        if budget.max_tokens is not None and transcript.tokens >= budget.max_tokens:
            return LoopOutcome(
                end=LoopEnd.TOKEN_BUDGET,
                error=f"the round used {transcript.tokens} of its {budget.max_tokens} tokens",
            )
        if checkpoint is not None and not first:
            decision = checkpoint(transcript.steps)
            if isinstance(decision, Abort):
                return LoopOutcome(end=LoopEnd.ABORTED, error=decision.reason)
            if isinstance(decision, Inject):
                transcript.append(*decision.messages)
        first = False
        offered = tools.schemas()
        completion, error = await _call(transcript, backend, offered, budget, observer)
        if completion is None:
            transcript.failed_tries += 1
            last_error = error
            continue
        reply = completion.message
        verdict = terminal.judge(reply, offered)
        if isinstance(verdict, Final):
            transcript.append(reply)
            return LoopOutcome(end=LoopEnd.FINAL, value=verdict.value, reply=reply)
        if isinstance(verdict, Violation):
            transcript.failed_tries += 1
            last_error = verdict.error
            transcript.append(*feedback(reply, verdict.error))
            continue
        assert isinstance(verdict, Proceed)
        results = await _execute(reply.tool_calls, tools, offered)
        transcript.append(
            reply,
            *(
                ChatMessage(role="tool", content=result.for_model(), tool_call_id=call.id)
                for call, result in zip(reply.tool_calls, results, strict=True)
            ),
        )


async def _call(
    transcript: Transcript,
    backend: LLMBackend,
    offered: tuple[ToolSchema, ...],
    budget: LoopBudget,
    observer: LoopObserver,
) -> tuple[Completion | None, str]:
    """One LLM call; returns the completion, or ``None`` and why the try failed.

    Any exception from the backend is a failed try, not a crash: a backend bug must cost
    the agent its tries, never the run.
    """
    request = CompletionRequest(messages=tuple(transcript.messages), tools=offered)
    transcript.steps += 1
    observer.call_started()
    timeout = budget.call_timeout
    outcome = CallOutcome.CANCELLED
    completion: Completion | None = None
    error: str | None = None
    try:
        with trio.move_on_after(math.inf if timeout is None else timeout) as timer:
            completion = await backend.complete(request)
        if timer.cancelled_caught:
            outcome = CallOutcome.TIMEOUT
            error = f"the model did not answer within {timeout:g}s"
        else:
            outcome = CallOutcome.OK
    except LLMError as exc:
        outcome, error = CallOutcome.ERROR, str(exc)
    except Exception as exc:
        outcome, error = CallOutcome.ERROR, f"the backend failed: {type(exc).__name__}: {exc}"
    finally:
        observer.call_finished(outcome, completion, error)
    if completion is None:
        return None, error or "the call produced no reply"
    transcript.spend(completion.usage)
    return completion, ""


async def _execute(
    calls: tuple[ToolCall, ...], tools: ToolExecutor, offered: tuple[ToolSchema, ...]
) -> list[ToolResult]:
    """Run a reply's calls: consecutive read-only calls together, others alone, in order."""
    read_only = {t.name for t in offered if t.read_only}
    results: list[ToolResult | None] = [None] * len(calls)

    async def run(index: int) -> None:
        results[index] = await _execute_one(tools, calls[index])

    i = 0
    while i < len(calls):
        if calls[i].name not in read_only:
            await run(i)
            i += 1
            continue
        j = i
        while j < len(calls) and calls[j].name in read_only:
            j += 1
        async with trio.open_nursery() as nursery:
            for index in range(i, j):
                nursery.start_soon(run, index)
        i = j
    return [r for r in results if r is not None]


async def _execute_one(tools: ToolExecutor, call: ToolCall) -> ToolResult:
    try:
        return await tools.execute(call)
    except Exception as exc:
        # Executors promise not to raise; one that does costs a tool error, not the round.
        return ToolResult(
            ok=False, error=f"the tool {call.name} failed: {type(exc).__name__}: {exc}"
        )


def feedback(reply: ChatMessage, error: str) -> list[ChatMessage]:
    """The failed reply and the error, so the model's next try can correct itself."""
    turn = [ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)]
    if reply.tool_calls:
        turn += [
            ChatMessage(role="tool", content=f"Error: {error}", tool_call_id=call.id)
            for call in reply.tool_calls
        ]
    else:
        turn.append(ChatMessage(role="user", content=f"Error: {error}"))
    return turn
