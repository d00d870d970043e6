"""run_loop: steps, terminals, tool execution order and concurrency, budgets, checkpoints."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence, Set

import pytest
import trio
import trio.testing

from conclave.actors.llm.errors import ContextOverflow, FatalLLMError, ResponseError
from conclave.actors.llm.protocol import (
    CallPurpose,
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMError,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolSchema,
    Usage,
)
from conclave.actors.loop import (
    Abort,
    CallOutcome,
    Continue,
    Inject,
    LoopBudget,
    LoopEnd,
    TextTerminal,
    ToolTerminal,
    Transcript,
    run_loop,
)
from conclave.actors.tools.protocol import ToolResult

Reply = ChatMessage | Exception | Callable[[CompletionRequest], ChatMessage]


class FakeBackend:
    """Plays its replies in order and keeps every request (and sink) it saw."""

    def __init__(
        self,
        replies: Sequence[Reply],
        *,
        latency: float = 0.0,
        usage: int = 0,
        stop: StopReason = StopReason.END_TURN,
    ) -> None:
        self._replies = list(replies)
        self.latency = latency
        self.usage = usage
        self.stop = stop
        self.requests: list[CompletionRequest] = []
        self.sinks: list[CompletionSink | None] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.requests.append(request)
        self.sinks.append(sink)
        await trio.sleep(self.latency)
        reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        message = reply(request) if callable(reply) else reply
        stop, self.stop = self.stop, StopReason.END_TURN
        return Completion(
            message=message,
            usage=Usage(input_tokens=self.usage, output_tokens=self.usage),
            stop_reason=stop,
        )


class FakeTools:
    """Tools that sleep for ``seconds`` and journal when they start and end."""

    def __init__(self, *, read_only: Set[str] = frozenset(), fail: Set[str] = frozenset()) -> None:
        names = ("read", "glob", "write", "edit", "submit")
        self._schemas = tuple(
            ToolSchema(name=n, description=n, parameters={}, read_only=n in read_only)
            for n in names
        )
        self.fail = fail
        self.journal: list[tuple[str, str, float]] = []

    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def withheld(self) -> tuple[ToolSchema, ...]:
        return ()

    async def execute(self, call: ToolCall) -> ToolResult:
        args = json.loads(call.arguments)
        self.journal.append(("start", call.id, trio.current_time()))
        await trio.sleep(args.get("seconds", 0))
        self.journal.append(("end", call.id, trio.current_time()))
        if call.name in self.fail:
            raise RuntimeError("disk on fire")
        return ToolResult(ok=True, output=f"{call.name} {call.id} done")


def calls(*specs: tuple[str, float]) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        tool_calls=tuple(
            ToolCall(id=f"c{i}", name=name, arguments=json.dumps({"seconds": seconds}))
            for i, (name, seconds) in enumerate(specs)
        ),
    )


def text(content: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=content)


def start() -> Transcript:
    return Transcript([ChatMessage(role="user", content="do the thing")])


BUDGET = LoopBudget()


async def test_a_reply_without_tool_calls_is_final_for_the_text_terminal() -> None:
    transcript = start()
    outcome = await run_loop(
        transcript,
        backend=FakeBackend([text("done")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert outcome.end is LoopEnd.FINAL
    assert outcome.value == "done"
    assert transcript.messages[-1] == text("done")


async def test_read_only_calls_run_concurrently(autojump_clock: trio.abc.Clock) -> None:
    tools = FakeTools(read_only={"read", "glob"})
    begun = trio.current_time()
    await run_loop(
        start(),
        backend=FakeBackend([calls(("read", 1.0), ("glob", 1.0), ("read", 1.0)), text("ok")]),
        tools=tools,
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert trio.current_time() - begun == pytest.approx(1.0)


async def test_calls_that_write_run_one_after_another_in_call_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    tools = FakeTools(read_only={"read"})
    await run_loop(
        start(),
        backend=FakeBackend([calls(("write", 2.0), ("edit", 1.0), ("write", 0.5)), text("ok")]),
        tools=tools,
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert [(kind, call) for kind, call, _ in tools.journal] == [
        ("start", "c0"),
        ("end", "c0"),
        ("start", "c1"),
        ("end", "c1"),
        ("start", "c2"),
        ("end", "c2"),
    ]


async def test_a_write_waits_for_the_reads_before_it(autojump_clock: trio.abc.Clock) -> None:
    tools = FakeTools(read_only={"read"})
    await run_loop(
        start(),
        backend=FakeBackend([calls(("read", 1.0), ("read", 2.0), ("write", 0.0)), text("ok")]),
        tools=tools,
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    write_start = next(t for kind, call, t in tools.journal if (kind, call) == ("start", "c2"))
    assert write_start == pytest.approx(2.0)


async def test_results_are_appended_in_call_order_even_when_they_finish_out_of_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    transcript = start()
    await run_loop(
        transcript,
        backend=FakeBackend([calls(("read", 2.0), ("glob", 0.1)), text("ok")]),
        tools=FakeTools(read_only={"read", "glob"}),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    results = [m for m in transcript.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ["c0", "c1"]
    assert results[0].content == "read c0 done"


async def test_the_next_request_holds_the_reply_and_every_result() -> None:
    backend = FakeBackend([calls(("read", 0.0), ("write", 0.0)), text("ok")])
    await run_loop(
        start(), backend=backend, tools=FakeTools(), terminal=TextTerminal(), budget=BUDGET
    )
    second = backend.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool", "tool"]


async def test_a_tool_that_raises_becomes_an_error_result_for_the_model() -> None:
    transcript = start()
    outcome = await run_loop(
        transcript,
        backend=FakeBackend([calls(("write", 0.0)), text("ok")]),
        tools=FakeTools(fail={"write"}),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert outcome.end is LoopEnd.FINAL
    result = next(m for m in transcript.messages if m.role == "tool")
    assert result.content.startswith("Error: the tool write failed: RuntimeError: disk on fire")


async def test_a_violation_goes_back_to_the_model_and_counts_as_a_try() -> None:
    transcript = start()
    backend = FakeBackend([text("I refuse to call tools"), calls(("submit", 0.0))])
    outcome = await run_loop(
        transcript,
        backend=backend,
        tools=FakeTools(),
        terminal=ToolTerminal("submit"),
        budget=BUDGET,
    )
    assert outcome.end is LoopEnd.FINAL
    assert transcript.failed_tries == 1
    retry = backend.requests[1].messages
    assert retry[-1] == ChatMessage(
        role="user", content="Error: End this turn by calling submit; you called no tool."
    )


async def test_a_call_to_a_tool_that_was_not_offered_is_a_violation() -> None:
    reply = ChatMessage(
        role="assistant", tool_calls=(ToolCall(id="x", name="rm_rf", arguments="{}"),)
    )
    transcript = start()
    outcome = await run_loop(
        transcript,
        backend=FakeBackend([reply, text("fine")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert outcome.value == "fine"
    error = next(m for m in transcript.messages if m.role == "tool")
    assert error.content.startswith("Error: Tool 'rm_rf' is not available now")


async def test_the_loop_ends_when_its_tries_run_out() -> None:
    outcome = await run_loop(
        start(),
        backend=FakeBackend([text(""), text(""), text(""), text("too late")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(max_tries=3),
    )
    assert outcome.end is LoopEnd.TRIES_EXHAUSTED
    assert outcome.error.startswith("3 tries failed; last error: The reply was empty")


async def test_the_loop_ends_when_its_steps_run_out() -> None:
    backend = FakeBackend([calls(("read", 0.0))] * 5)
    outcome = await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(max_steps=4),
    )
    assert outcome.end is LoopEnd.STEPS_EXHAUSTED
    assert len(backend.requests) == 4


async def test_any_backend_exception_is_a_failed_try_not_a_crash(
    autojump_clock: trio.abc.Clock,
) -> None:
    transcript = start()
    outcome = await run_loop(
        transcript,
        backend=FakeBackend([KeyError("surprise"), LLMError("503"), text("ok")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert outcome.value == "ok"
    assert transcript.failed_tries == 2


async def test_a_call_that_outlives_its_timeout_is_a_failed_try(
    autojump_clock: trio.abc.Clock,
) -> None:
    outcome = await run_loop(
        start(),
        backend=FakeBackend([text("slow")] * 2, latency=10.0),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(call_timeout=5.0, max_tries=2),
    )
    assert outcome.end is LoopEnd.TRIES_EXHAUSTED
    assert "did not answer within 5s" in outcome.error


async def test_the_round_time_limit_ends_the_loop(autojump_clock: trio.abc.Clock) -> None:
    outcome = await run_loop(
        start(),
        backend=FakeBackend([calls(("read", 30.0))] * 10),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(round_time_limit=60.0),
    )
    assert outcome.end is LoopEnd.TIME_LIMIT
    assert trio.current_time() == pytest.approx(60.0)


async def test_the_token_budget_ends_the_loop() -> None:
    outcome = await run_loop(
        start(),
        backend=FakeBackend([calls(("read", 0.0))] * 10, usage=100),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(max_tokens=500),
    )
    assert outcome.end is LoopEnd.TOKEN_BUDGET


async def test_a_cancelled_tool_call_leaves_no_half_step_in_the_transcript(
    autojump_clock: trio.abc.Clock,
) -> None:
    transcript = start()
    with trio.move_on_after(1.0):
        await run_loop(
            transcript,
            backend=FakeBackend([calls(("read", 0.0), ("write", 5.0))]),
            tools=FakeTools(),
            terminal=TextTerminal(),
            budget=BUDGET,
        )
    assert [m.role for m in transcript.messages] == ["user"]


async def test_an_inject_enters_at_the_next_step_boundary() -> None:
    note = ChatMessage(role="user", content="agent2 has a new answer")
    decisions = [Inject(messages=(note,))]
    seen_steps: list[int] = []

    def checkpoint(step: int) -> Inject | Continue:
        seen_steps.append(step)
        return decisions.pop(0) if decisions else Continue()

    backend = FakeBackend([calls(("read", 0.0)), text("ok")])
    await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
        checkpoint=checkpoint,
    )
    assert seen_steps == [1]
    assert note not in backend.requests[0].messages
    assert backend.requests[1].messages[-1] == note
    assert backend.requests[1].messages[-2].role == "tool"


async def test_a_checkpoint_abort_ends_the_loop_before_the_next_call() -> None:
    backend = FakeBackend([calls(("read", 0.0)), text("never")])
    outcome = await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
        checkpoint=lambda step: Abort(reason="stale"),
    )
    assert outcome.end is LoopEnd.ABORTED
    assert outcome.error == "stale"
    assert len(backend.requests) == 1


async def test_reentering_with_the_same_transcript_keeps_counting_tries() -> None:
    transcript = start()
    backend = FakeBackend([text(""), text(""), text("")])
    first = await run_loop(
        transcript,
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(max_tries=2),
    )
    again = await run_loop(
        transcript,
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(max_tries=2),
    )
    assert first.end is again.end is LoopEnd.TRIES_EXHAUSTED
    assert len(backend.requests) == 2


async def test_the_observer_hears_each_call_and_how_it_ended(
    autojump_clock: trio.abc.Clock,
) -> None:
    heard: list[CallOutcome] = []

    class Observer:
        def call_started(self) -> None:
            heard.append(CallOutcome.CANCELLED)

        def call_finished(
            self, outcome: CallOutcome, completion: Completion | None, error: str | None
        ) -> None:
            heard[-1] = outcome

        def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
            return None

    await run_loop(
        start(),
        backend=FakeBackend([LLMError("down"), text("ok")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
        observer=Observer(),
    )
    assert heard == [CallOutcome.ERROR, CallOutcome.OK]


async def test_the_tool_terminal_needs_its_call_alone() -> None:
    outcome = await run_loop(
        start(),
        backend=FakeBackend([calls(("read", 0.0), ("submit", 0.0)), calls(("submit", 0.0))]),
        tools=FakeTools(),
        terminal=ToolTerminal("submit"),
        budget=BUDGET,
    )
    assert outcome.end is LoopEnd.FINAL
    assert outcome.value is not None and outcome.value.name == "submit"


async def test_the_transcript_reports_every_appended_message() -> None:
    written: list[ChatMessage] = []
    transcript = Transcript([ChatMessage(role="user", content="task")], on_append=written.extend)
    await run_loop(
        transcript,
        backend=FakeBackend([calls(("read", 0.0)), text("ok")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert written == transcript.messages


async def test_a_fatal_backend_error_ends_the_loop_at_once() -> None:
    backend = FakeBackend([FatalLLMError("invalid API key"), text("never")])
    outcome = await run_loop(
        start(), backend=backend, tools=FakeTools(), terminal=TextTerminal(), budget=BUDGET
    )
    assert outcome.end is LoopEnd.FATAL
    assert outcome.error == "invalid API key"
    assert len(backend.requests) == 1


async def test_a_context_overflow_ends_the_loop_for_the_caller_to_shorten() -> None:
    outcome = await run_loop(
        start(),
        backend=FakeBackend([ContextOverflow("prompt is 300k tokens")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=BUDGET,
    )
    assert outcome.end is LoopEnd.CONTEXT_OVERFLOW


async def test_a_response_error_is_told_to_the_model_as_a_failed_try() -> None:
    transcript = start()
    backend = FakeBackend([ResponseError("the reply was refused"), text("ok")])
    outcome = await run_loop(
        transcript, backend=backend, tools=FakeTools(), terminal=TextTerminal(), budget=BUDGET
    )
    assert outcome.value == "ok"
    assert transcript.failed_tries == 1
    assert backend.requests[1].messages[-1].content == "Error: the reply was refused"


async def test_a_reply_cut_off_at_the_output_limit_is_sent_back_as_a_failed_try() -> None:
    transcript = start()
    backend = FakeBackend([text("half an ans"), text("whole")], stop=StopReason.MAX_TOKENS)
    outcome = await run_loop(
        transcript, backend=backend, tools=FakeTools(), terminal=TextTerminal(), budget=BUDGET
    )
    assert outcome.value == "whole"
    assert "cut off at the output token limit" in backend.requests[1].messages[-1].content


async def test_each_call_gets_the_sink_purpose_and_tool_choice() -> None:
    class Sink:
        def text(self, delta: str) -> None: ...

        def reasoning(self, delta: str) -> None: ...

        def tool_arguments(self, index: int, name: str, delta: str) -> None: ...

        def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None: ...

    sink = Sink()
    backend = FakeBackend([calls(("submit", 0.0))])
    await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=ToolTerminal("submit"),
        budget=LoopBudget(max_output_tokens=512),
        sink=sink,
        purpose=CallPurpose.PRESENT,
        tool_choice=ToolChoice.REQUIRED,
    )
    request = backend.requests[0]
    assert backend.sinks == [sink]
    assert (request.purpose, request.tool_choice, request.max_output_tokens) == (
        CallPurpose.PRESENT,
        ToolChoice.REQUIRED,
        512,
    )


async def test_a_violating_reply_goes_back_with_its_provider_state() -> None:
    thinking = {"thinking": [{"type": "thinking", "signature": "sig"}]}
    bad = ChatMessage(role="assistant", content="", provider_state=thinking)
    backend = FakeBackend([bad, text("ok")])
    await run_loop(
        start(), backend=backend, tools=FakeTools(), terminal=TextTerminal(), budget=BUDGET
    )
    assert backend.requests[1].messages[1].provider_state == thinking
