"""What an agent's loops tell people: its LLM calls, streamed text, retries and tool calls.

The loop engine reports to a :class:`~actors.loop.LoopObserver` and a
:class:`~actors.llm.protocol.CompletionSink`; here both become domain events. Streamed text
is coalesced: at most one :class:`~actors.events.loop.TextDelta` per agent per
:data:`DELTA_INTERVAL`, however finely a backend streams, so a thousand streaming agents
cost subscribers a bounded event rate.
"""

from __future__ import annotations

import math

import trio

from conclave.actors.agent.events import LlmRequestFinished, LlmRequestStarted
from conclave.actors.events.loop import LlmRetry, LlmTryFailed, TextDelta
from conclave.actors.llm.protocol import CallOutcome, CallPurpose, Completion, Usage
from conclave.actors.llm.redaction import redact
from conclave.runtime import ActorContext

__all__ = ["DELTA_INTERVAL", "CallEvents", "StreamEvents"]

DELTA_INTERVAL = 0.05
"""Seconds between two TextDelta events of one agent, at least."""


_NONE = Usage()
"""No tokens: one frozen instance for every call that reports none."""


class CallEvents:
    """A loop observer that records ``LlmRequestStarted`` and ``LlmRequestFinished``."""

    def __init__(self, context: ActorContext, agent: str, purpose: CallPurpose) -> None:
        self._context = context
        self._agent = agent
        self._purpose = purpose

    def call_started(self) -> None:
        self._context.record(
            LlmRequestStarted(at=trio.current_time(), agent=self._agent, purpose=self._purpose)
        )

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None:
        """Record the call's end: what the completion says (model, stop reason, usage), or
        the error with every key redacted (providers echo keys in their error bodies)."""
        reported = completion.usage if completion is not None else None
        usage = reported or _NONE
        estimate = (completion.estimated_usage if completion is not None else None) or _NONE
        self._context.record(
            LlmRequestFinished(
                at=trio.current_time(),
                agent=self._agent,
                purpose=self._purpose,
                outcome=outcome,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                model=(completion.model or None) if completion is not None else None,
                stop_reason=completion.stop_reason if completion is not None else None,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                error=redact(error) if error else None,
                usage_reported=completion is None or reported is not None,
                estimated_input_tokens=estimate.input_tokens,
                estimated_output_tokens=estimate.output_tokens,
            )
        )

    def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
        self._context.record(
            LlmTryFailed(
                at=trio.current_time(),
                agent=self._agent,
                failed=failed,
                tries=tries,
                error=redact(error),
                wait=wait,
            )
        )


class StreamEvents:
    """A completion sink that records coalesced ``TextDelta`` and every ``LlmRetry``.

    Text that arrives within :data:`DELTA_INTERVAL` of the last delta waits in a buffer; a
    flush in the incarnation's background work sends it when the interval is over. If the
    incarnation ends first, the buffered text is dropped: deltas are ephemeral, the whole
    reply is in the transcript."""

    def __init__(self, context: ActorContext, agent: str) -> None:
        self._context = context
        self._agent = agent
        self._buffer: list[str] = []
        self._last = -math.inf
        self._flush_due = False

    def text(self, delta: str) -> None:
        if not delta:
            return
        self._buffer.append(delta)
        now = trio.current_time()
        if now - self._last >= DELTA_INTERVAL:
            self._emit(now)
        elif not self._flush_due:
            self._flush_due = True
            self._context.start_soon(self._flush_at, self._last + DELTA_INTERVAL)

    def reasoning(self, delta: str) -> None:
        return None

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        return None

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        self._context.record(
            LlmRetry(
                at=trio.current_time(),
                agent=self._agent,
                attempt=attempt,
                status=status,
                delay=delay,
                error=redact(error),
            )
        )

    async def _flush_at(self, when: float) -> None:
        await trio.sleep_until(when)
        self._flush_due = False
        if self._buffer:
            self._emit(trio.current_time())

    def _emit(self, now: float) -> None:
        text = "".join(self._buffer)
        self._buffer.clear()
        self._last = now
        self._context.record(TextDelta(at=now, agent=self._agent, text=text))
