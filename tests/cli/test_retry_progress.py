"""Retries and failed tries show as they happen, in every front end: a timeline line for
each (without ``--verbose``), the agent's state and counts in the live status block, and
the REPL's progress line."""

from __future__ import annotations

import attrs

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.agent.status import AgentStatus
from conclave.actors.events import LlmRetry, LlmTryFailed
from conclave.actors.events.view import AgentView, RunView
from conclave.actors.llm.protocol import CallOutcome, CallPurpose
from conclave.runtime import Event
from conclave.ui.headless.live_status import agent_state, status_line
from conclave.ui.repl.render import agent_line
from conclave.ui.timeline import describe

RETRY = LlmRetry(
    at=1.0, agent="bob", attempt=1, status=503, delay=0.7, error="the server failed (503)"
)
FAILED = LlmTryFailed(
    at=21.0,
    agent="bob",
    failed=1,
    tries=3,
    error="no reply began within 20s (timeouts.first_byte)",
    wait=1.4,
)


def test_a_retry_is_a_timeline_line_without_verbose() -> None:
    assert describe(RETRY) == "bob's request failed (503), retry 1 in 0.7s: the server failed (503)"


def test_a_failed_try_is_a_timeline_line_saying_when_the_next_begins() -> None:
    assert describe(FAILED) == (
        "bob try 1 of 3 failed (next try in 1.4s): no reply began within 20s (timeouts.first_byte)"
    )


def test_the_last_failed_try_says_no_tries_are_left() -> None:
    last = LlmTryFailed(at=70.0, agent="bob", failed=3, tries=3, error="down", wait=None)
    assert describe(last) == "bob try 3 of 3 failed (no tries left): down"


def _bob_after(*events: Event) -> AgentView:
    """Bob, working, as the view has him after ``events``."""
    view = RunView()
    for event in events:
        view.apply(event)
    return attrs.evolve(view.agents["bob"], status=AgentStatus.WORKING)


def _finished(outcome: CallOutcome) -> LlmRequestFinished:
    return LlmRequestFinished(at=2.0, agent="bob", purpose=CallPurpose.ROUND, outcome=outcome)


def test_the_live_status_counts_retries_and_failed_tries_and_says_retrying() -> None:
    bob = _bob_after(RETRY, _finished(CallOutcome.ERROR), FAILED)
    assert agent_state(bob) == "retrying"
    line = status_line(bob, now=22.0)
    assert "1 retry" in line
    assert "1 failed try" in line


def test_the_agent_is_thinking_again_once_a_call_succeeds() -> None:
    bob = _bob_after(FAILED, _finished(CallOutcome.OK))
    assert agent_state(bob) == "thinking"
    assert bob.failed_tries == 1


def test_the_repl_progress_says_the_agent_retries_and_why() -> None:
    bob = _bob_after(FAILED)
    assert agent_line(bob) == (
        "retrying after 1 failed try: no reply began within 20s (timeouts.first_byte)"
    )
