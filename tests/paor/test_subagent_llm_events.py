"""A sub-agent's LLM calls are recorded under its path (``paor/1.look``), as its tool calls
are, not its parent's name: the event log, ``conclave replay`` and the timeline tell them
apart, and the parent's row and the run's usage count them as the parent's, at its price."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.agent.events import LlmRequestFinished, LlmRequestStarted
from conclave.actors.events.loop import LlmTryFailed
from conclave.actors.events.view import RunView
from conclave.actors.llm.protocol import CallOutcome, CallPurpose
from conclave.actors.run.usage import UsageTap
from conclave.config.schema import AgentConfig, ConclaveConfig
from conclave.config.schema.endpoint import Price
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from conclave.runtime.eventlog import read_event_log
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.repl.live import LiveRun
from conclave.ui.timeline import usage_unknown
from tests.paor.test_subagent_tool_events import _log


def _llm_events(log: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in events if e["kind"] in ("llm_request_started", "llm_request_finished")]


def _finished(agent: str, *, input_tokens: int, output_tokens: int) -> LlmRequestFinished:
    return LlmRequestFinished(
        at=0.2,
        agent=agent,
        purpose=CallPurpose.ROUND,
        outcome=CallOutcome.OK,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def test_the_sub_agents_llm_calls_are_recorded_under_its_path(tmp_path: Path, repo: Path) -> None:
    events = _llm_events(_log(tmp_path, repo))

    started = [e["agent"] for e in events if e["kind"] == "llm_request_started"]
    finished = [e["agent"] for e in events if e["kind"] == "llm_request_finished"]
    assert started.count("paor/1.look") == finished.count("paor/1.look") == 5
    assert started.count("paor") == finished.count("paor") == 7
    assert set(started) == {"paor", "paor/1.look"}


def test_replay_names_the_sub_agent_on_its_llm_calls(tmp_path: Path, repo: Path) -> None:
    log = _log(tmp_path, repo)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["replay", "--verbose", str(log)]) == ExitCode.OK

    assert "paor/1.look → LLM (round)" in out.getvalue()
    assert "paor/1.look ← LLM (round): ok" in out.getvalue()
    assert "paor → LLM (round)" in out.getvalue()


def test_the_parents_row_counts_its_sub_agents_llm_calls_and_tokens(
    tmp_path: Path, repo: Path
) -> None:
    log = _log(tmp_path, repo)
    finished = [e for e in _llm_events(log) if e["kind"] == "llm_request_finished"]

    view = RunView.from_events(read_event_log(log).events)

    assert list(view.agents) == ["paor"]
    assert view.agents["paor"].llm_calls == 12
    assert view.agents["paor"].input_tokens == sum(e["input_tokens"] for e in finished)
    assert view.agents["paor"].output_tokens == sum(e["output_tokens"] for e in finished)


def test_a_sub_agents_failed_try_is_its_parents() -> None:
    started = LlmRequestStarted(at=0.1, agent="w1/1.look", purpose=CallPurpose.ROUND)
    failed = LlmTryFailed(at=0.2, agent="w1/1.look", failed=1, tries=3, error="503", wait=1.0)

    view = RunView.from_events([started, failed])

    assert list(view.agents) == ["w1"]
    assert (view.agents["w1"].llm_calls, view.agents["w1"].failed_tries) == (1, 1)
    assert view.agents["w1"].failing == "503"


def _priced(agent: str) -> AgentConfig:
    price = Price(input_per_mtok=2.0, output_per_mtok=10.0)
    backend = OpenAIBackendConfig(model="m", api_key=Secret("sk-test-key-0001"), price=price)
    return AgentConfig(id=agent, backend=backend)


def test_a_sub_agents_calls_cost_its_agents_price() -> None:
    tap = UsageTap([_priced("w1")])

    tap.record(_finished("w1", input_tokens=1_000_000, output_tokens=0))
    tap.record(_finished("w1/1.look", input_tokens=0, output_tokens=100_000))

    usage = tap.usage()
    assert list(usage.agents) == ["w1"]
    assert usage.agents["w1"].cost_usd == 3.0
    assert usage.total.cost_usd == 3.0


def test_the_live_runs_cost_counts_a_sub_agents_calls_at_its_agents_price() -> None:
    live = LiveRun(ConclaveConfig(agents=(_priced("w1"),)))

    live.apply(_finished("w1", input_tokens=1_000_000, output_tokens=0))
    live.apply(_finished("w1/1.look", input_tokens=0, output_tokens=100_000))

    assert live.snapshot().cost_usd == 3.0


def test_a_sub_agents_call_without_usage_says_its_agents_usage_is_unknown() -> None:
    call = attrs.evolve(
        _finished("w1/1.look", input_tokens=0, output_tokens=0), usage_reported=False
    )
    view = RunView.from_events([call])

    line = usage_unknown(call, view)

    assert line is not None
    assert line.startswith("w1's server reports no usage: its tokens and cost are unknown")
