"""The defaults that decide what a failing server costs a run: a server that accepts a
request and never answers costs an agent about a minute, however its retries are set."""

from __future__ import annotations

from conclave.actors.llm.retry import TRY_BACKOFF
from conclave.config.schema import OrchestratorConfig
from conclave.config.schema.endpoint import Timeouts
from conclave.config.schema.openai import OpenAIBackendConfig


def test_a_dead_endpoint_costs_an_agent_about_a_minute_at_most() -> None:
    timeouts, orchestrator = Timeouts(), OrchestratorConfig()
    tries = orchestrator.max_tries_per_round
    waits = sum(TRY_BACKOFF.ceiling(n) for n in range(1, tries))
    worst = tries * (timeouts.connect + timeouts.first_byte) + waits
    assert 50.0 <= tries * timeouts.first_byte + waits <= 65.0  # accepted, then silence
    assert worst <= 95.0  # and each connection slow to open as well


def test_the_failure_defaults() -> None:
    timeouts = Timeouts()
    assert (timeouts.connect, timeouts.first_byte, timeouts.first_token, timeouts.stall) == (
        10.0,
        20.0,
        300.0,
        30.0,
    )
    assert timeouts.total is None
    assert OpenAIBackendConfig(model="m").max_retries == 2
    orchestrator = OrchestratorConfig()
    assert orchestrator.max_tries_per_round == 3
    assert orchestrator.call_timeout == 600.0
    assert orchestrator.failing_agent_grace == 15.0
