"""Between a round's tries: a failed call is followed by a wait (exponential back-off with
full jitter, at least the server's ``Retry-After``), a reply that broke the rules is not;
every failed try is told to the observer as it happens, with when the next one begins."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio

from conclave.actors.llm.errors import LLMError
from conclave.actors.llm.protocol import CallOutcome, Completion, CompletionRequest, CompletionSink
from conclave.actors.llm.retry import Backoff
from conclave.actors.loop import LoopBudget, LoopEnd, TextTerminal, run_loop
from tests.loop.test_run_loop import FakeBackend, FakeTools, Reply, start, text

HALF = Backoff(initial=1.0, cap=30.0, draw=lambda: 0.5)
"""Waits half of each ceiling: 0.5 s, 1 s, 2 s..."""


class Heard:
    """An observer that keeps the failed tries it hears of."""

    def __init__(self) -> None:
        self.failed: list[tuple[int, int, str, float | None]] = []

    def call_started(self) -> None:
        return None

    def call_finished(
        self, outcome: CallOutcome, completion: Completion | None, error: str | None
    ) -> None:
        return None

    def try_failed(self, failed: int, tries: int, error: str, wait: float | None) -> None:
        self.failed.append((failed, tries, error, wait))


class Timed(FakeBackend):
    """Notes when each call is made."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        super().__init__(replies)
        self.times: list[float] = []

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.times.append(trio.current_time())
        return await super().complete(request, sink=sink)


async def test_a_failed_call_is_followed_by_a_growing_jittered_wait(
    autojump_clock: trio.abc.Clock,
) -> None:
    backend = Timed([LLMError("503"), LLMError("503"), text("ok")])
    outcome = await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(backoff=HALF),
    )
    assert outcome.value == "ok"
    assert backend.times == [0.0, pytest.approx(0.5), pytest.approx(1.5)]


async def test_every_failed_try_is_told_as_it_happens_with_when_the_next_begins(
    autojump_clock: trio.abc.Clock,
) -> None:
    heard = Heard()
    outcome = await run_loop(
        start(),
        backend=FakeBackend([LLMError("503 a"), LLMError("503 b"), LLMError("503 c")]),
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(max_tries=3, backoff=HALF),
        observer=heard,
    )
    assert outcome.end is LoopEnd.TRIES_EXHAUSTED
    assert heard.failed == [(1, 3, "503 a", 0.5), (2, 3, "503 b", 1.0), (3, 3, "503 c", None)]
    assert trio.current_time() == pytest.approx(1.5)  # no wait after the last


async def test_a_reply_that_broke_the_rules_is_tried_again_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    heard = Heard()
    backend = Timed([text(""), text("ok")])
    await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(backoff=HALF),
        observer=heard,
    )
    assert backend.times == [0.0, 0.0]
    [(failed, tries, error, wait)] = heard.failed
    assert (failed, tries, wait) == (1, 3, 0.0)
    assert error.startswith("The reply was empty")


async def test_the_next_try_waits_at_least_as_long_as_the_server_asked(
    autojump_clock: trio.abc.Clock,
) -> None:
    backend = Timed([LLMError("429", retry_after=5.0), text("ok")])
    await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(backoff=HALF),
    )
    assert backend.times == [0.0, pytest.approx(5.0)]


async def test_a_wait_longer_than_the_round_may_take_ends_the_round_at_once_saying_so(
    autojump_clock: trio.abc.Clock,
) -> None:
    backend = Timed([LLMError("rate-limited (429)", retry_after=300.0), text("ok")])
    outcome = await run_loop(
        start(),
        backend=backend,
        tools=FakeTools(),
        terminal=TextTerminal(),
        budget=LoopBudget(backoff=HALF, round_time_limit=60.0),
    )
    assert outcome.end is LoopEnd.FATAL
    assert "asked to wait 300s" in outcome.error
    assert outcome.error.startswith("rate-limited (429)")
    assert backend.times == [0.0]
    assert trio.current_time() == 0.0
