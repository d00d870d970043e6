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

from conclave.actors.llm.errors import ContextOverflow, FatalLLMError, LLMError, ResponseError
from conclave.actors.llm.pricing import estimated_usage
from conclave.actors.llm.protocol import (
    CallOutcome,
    CallPurpose,
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolSchema,
)
from conclave.actors.llm.retry import too_long
from conclave.actors.loop.budget import LoopBudget
from conclave.actors.loop.checkpoint import Abort, Checkpoint, Inject
from conclave.actors.loop.terminals import Final, Proceed, Terminal, Violation
from conclave.actors.loop.transcript import Transcript
from conclave.actors.tools.protocol import ToolExecutor, ToolResult

__all__ = ["QUIET", "CallOutcome", "LoopEnd", "LoopObserver", "LoopOutcome", "feedback", "run_loop"]

T = TypeVar("T")


class LoopEnd(enum.Enum):
    FINAL = "final"
    TRIES_EXHAUSTED = "tries_exhausted"
    STEPS_EXHAUSTED = "steps_exhausted"
    TIME_LIMIT = "time_limit"
    TOKEN_BUDGET = "token_budget"
    ABORTED = "aborted"
    FATAL = "fatal"
    """The backend cannot serve this agent at all (bad key, unknown model)."""
    CONTEXT_OVERFLOW = "context_overflow"
    """The transcript no longer fits the model: the caller may rebuild it shorter."""


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
    """Hears about each LLM call, to record events and count cost, and about each failed
    try as it happens."""

    def call_started(self) -> None: ...

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None: ...

    def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
        """Try number ``failed`` of ``tries`` failed because of ``error``; the next begins
        in ``wait`` seconds, or (``None``) there is none."""
        ...


class _Quiet:
    def call_started(self) -> None:
        return None

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None:
        return None

    def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
        return None


QUIET: LoopObserver = _Quiet()
"""Hears nothing: for loops nobody records."""


async def run_loop(
    transcript: Transcript,
    *,
    backend: LLMBackend,
    tools: ToolExecutor,
    terminal: Terminal[T],
    budget: LoopBudget,
    checkpoint: Checkpoint | None = None,
    observer: LoopObserver = QUIET,
    sink: CompletionSink | None = None,
    purpose: CallPurpose = CallPurpose.ROUND,
    tool_choice: ToolChoice = ToolChoice.AUTO,
) -> LoopOutcome[T]:
    """Run steps until the terminal accepts a reply or a budget runs out.

    ``transcript`` is extended in place and its counters carry over between calls, so a
    caller may re-enter with the same transcript (after appending feedback) and the
    budgets count the whole round. ``budget.round_time_limit`` counts from this call.
    """
    limit = budget.round_time_limit
    call = _Caller(backend, budget, observer, sink, purpose, tool_choice)
    if limit is None:
        # No cancel scope where nothing can expire: a round of a big run pays for each one.
        return await _steps(transcript, call, tools, terminal, budget, checkpoint, observer)
    with trio.move_on_after(limit) as timer:
        outcome = await _steps(transcript, call, tools, terminal, budget, checkpoint, observer)
    if timer.cancelled_caught:
        return LoopOutcome(
            end=LoopEnd.TIME_LIMIT, error=f"the round took longer than its limit of {limit:g}s"
        )
    return outcome


async def _steps(
    transcript: Transcript,
    call: _Caller,
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
        try:
            completion = await call(transcript, offered)
        except FatalLLMError as exc:
            return LoopOutcome(end=LoopEnd.FATAL, error=str(exc))
        except ContextOverflow as exc:
            return LoopOutcome(end=LoopEnd.CONTEXT_OVERFLOW, error=str(exc))
        except _FailedTry as failed:
            transcript.failed_tries += 1
            last_error = failed.error
            if failed.feedback:
                transcript.append(ChatMessage(role="user", content=f"Error: {failed.error}"))
                _failed(transcript, budget, observer, failed.error, wait=0.0)
                continue
            refused = await _back_off(transcript, budget, observer, failed)
            if refused is not None:
                return LoopOutcome(end=LoopEnd.FATAL, error=refused)
            continue
        reply = completion.message
        if completion.stop_reason is StopReason.MAX_TOKENS:
            transcript.failed_tries += 1
            last_error = _CUT_OFF
            transcript.append(*feedback(reply, _CUT_OFF))
            _failed(transcript, budget, observer, _CUT_OFF, wait=0.0)
            continue
        # A call to a tool the executor withholds (plan mode's write tools) is judged as one
        # offered: it runs, and the executor's refusal is what the model reads, not a try.
        verdict = terminal.judge(reply, offered + tools.withheld())
        if isinstance(verdict, Final):
            transcript.append(reply)
            return LoopOutcome(end=LoopEnd.FINAL, value=verdict.value, reply=reply)
        if isinstance(verdict, Violation):
            transcript.failed_tries += 1
            last_error = verdict.error
            transcript.append(*feedback(reply, verdict.error))
            _failed(transcript, budget, observer, verdict.error, wait=0.0)
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


def _failed(
    transcript: Transcript, budget: LoopBudget, observer: LoopObserver, error: str, *, wait: float
) -> None:
    """Tell the observer of the failed try just counted, and when the next one begins."""
    last = transcript.failed_tries >= budget.max_tries
    observer.try_failed(transcript.failed_tries, budget.max_tries, error, None if last else wait)


async def _back_off(
    transcript: Transcript, budget: LoopBudget, observer: LoopObserver, failed: _FailedTry
) -> str | None:
    """After a failed call, wait before the next try: the back-off's draw, or the server's
    ``Retry-After`` if longer. A ``Retry-After`` longer than the round may still take is not
    waited for: the error saying how long the server asked is returned instead."""
    if transcript.failed_tries >= budget.max_tries:
        _failed(transcript, budget, observer, failed.error, wait=0.0)
        return None
    asked = failed.retry_after
    wait = budget.backoff.wait(transcript.failed_tries, asked=asked)
    if asked is not None:
        refused = too_long(asked, trio.current_effective_deadline() - trio.current_time())
        if refused is not None:
            observer.try_failed(transcript.failed_tries, budget.max_tries, failed.error, None)
            return f"{failed.error}; {refused}"
    _failed(transcript, budget, observer, failed.error, wait=wait)
    await trio.sleep(wait)
    return None


_CUT_OFF = (
    "Your reply was cut off at the output token limit; reply again, more briefly, and "
    "finish with the required call."
)


class _FailedTry(Exception):
    """A call that produced no usable reply; ``feedback`` says whether the model should
    hear the error (it was about its reply) or not (the backend or the network failed)."""

    def __init__(
        self, error: str, *, feedback: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(error)
        self.error = error
        self.feedback = feedback
        self.retry_after = retry_after


class _Caller:
    """Makes one LLM call per step, with the loop's settings, and reports it."""

    def __init__(
        self,
        backend: LLMBackend,
        budget: LoopBudget,
        observer: LoopObserver,
        sink: CompletionSink | None,
        purpose: CallPurpose,
        tool_choice: ToolChoice,
    ) -> None:
        self.backend = backend
        self.timeout = budget.call_timeout
        self.max_output_tokens = budget.max_output_tokens
        self.observer = observer
        self.sink = sink
        self.purpose = purpose
        self.tool_choice = tool_choice

    async def __call__(self, transcript: Transcript, offered: tuple[ToolSchema, ...]) -> Completion:
        """One LLM call. Fatal errors and context overflow propagate; every other failure,
        any exception included, is a :class:`_FailedTry`: a backend bug must cost the agent
        its tries, never the run."""
        request = CompletionRequest(
            messages=tuple(transcript.messages),
            tools=offered,
            tool_choice=self.tool_choice if offered else ToolChoice.AUTO,
            max_output_tokens=self.max_output_tokens,
            purpose=self.purpose,
        )
        transcript.steps += 1
        self.observer.call_started()
        timeout = self.timeout
        outcome = CallOutcome.CANCELLED
        completion: Completion | None = None
        error: str | None = None
        retry_after: float | None = None
        try:
            with trio.move_on_after(math.inf if timeout is None else timeout) as timer:
                completion = await self.backend.complete(request, sink=self.sink)
            if timer.cancelled_caught:
                outcome = CallOutcome.TIMEOUT
                error = f"the model did not answer within {timeout:g}s"
            else:
                outcome = CallOutcome.OK
                completion = _with_estimate(request, completion)
        except (FatalLLMError, ContextOverflow) as exc:
            outcome, error = CallOutcome.ERROR, str(exc)
            raise
        except ResponseError as exc:
            outcome, error = CallOutcome.ERROR, str(exc)
            raise _FailedTry(error, feedback=True) from None
        except LLMError as exc:
            outcome, error, retry_after = CallOutcome.ERROR, str(exc), exc.retry_after
        except Exception as exc:
            outcome = CallOutcome.ERROR
            error = f"the backend failed: {type(exc).__name__}: {exc}"
        finally:
            self.observer.call_finished(outcome, completion, error)
        if completion is None:
            raise _FailedTry(error or "the call produced no reply", retry_after=retry_after)
        if completion.usage is not None:
            transcript.spend(completion.usage)
        return completion


def _with_estimate(request: CompletionRequest, completion: Completion | None) -> Completion | None:
    """``completion``, with its tokens estimated if its server reported none."""
    if completion is None or completion.usage is not None:
        return completion
    estimate = estimated_usage(request, completion.message)
    return attrs.evolve(completion, estimated_usage=estimate)


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
    # The reply goes back as the model sent it, provider state included: Anthropic refuses a
    # tool loop whose assistant turn lost its signed thinking block.
    turn = [reply]
    if reply.tool_calls:
        turn += [
            ChatMessage(role="tool", content=f"Error: {error}", tool_call_id=call.id)
            for call in reply.tool_calls
        ]
    else:
        turn.append(ChatMessage(role="user", content=f"Error: {error}"))
    return turn
