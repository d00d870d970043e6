"""stream-json at scale: a run of 10,000 agents streams every line, numbered without a gap.

One real run (scripted, latency 0, on the autojump clock) shared by the specs below; it
takes about a minute, most of it the run itself."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import trio
import trio.testing

from conclave.actors.events import EventHub
from conclave.actors.run.driver import RunSpec, open_run
from conclave.config.modes import ModeState, apply_modes
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.ui.progress import RunClock, StreamJson

# One xdist worker runs this module, so the 10,000-agent run is made once.
pytestmark = pytest.mark.xdist_group("stream_json_scale")

AGENTS = 10_000


def big_spec() -> RunSpec:
    members = tuple(
        AgentConfig(id=f"a{i:05d}", backend=ScriptedBackendConfig(seed=i, latency=0.0))
        for i in range(AGENTS)
    )
    # Ring visibility, refinement off: each agent answers once and votes once.
    config = ConclaveConfig(
        agents=members, orchestrator=OrchestratorConfig(visibility="ring", quiet_period=None)
    )
    return RunSpec(task="Plan a migration", config=apply_modes(config, ModeState(refinement=False)))


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    out = io.StringIO()

    async def watch() -> None:
        spec = big_spec()
        stream = StreamJson(out, spec=spec, run_id="big", include_partial=True, clock=RunClock())
        with EventHub() as hub:
            hub.subscribe_sync(stream.record, stream.kinds)
            async with open_run(spec, taps=[hub]) as handle:
                hub.bind(handle.system.record)
                result = await handle.result()
        stream.finish(result)

    trio.run(watch, clock=trio.testing.MockClock(autojump_threshold=0))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_seq_is_gap_free_over_every_line_of_10_000_agents(lines: list[dict[str, Any]]) -> None:
    assert [line["seq"] for line in lines] == list(range(len(lines)))


def test_every_agents_answer_and_vote_are_streamed(lines: list[dict[str, Any]]) -> None:
    types = [line["type"] for line in lines]

    assert types.count("answer_added") == AGENTS
    assert types.count("vote_added") == AGENTS


def test_the_big_stream_starts_with_run_started_and_ends_with_the_result(
    lines: list[dict[str, Any]],
) -> None:
    assert lines[0]["type"] == "run_started"
    assert len(lines[0]["agents"]) == AGENTS
    assert [line["type"] for line in lines[-2:]] == ["run_ended", "result"]
    assert lines[-1]["termination"] == "completed"


def test_t_never_decreases_over_the_big_stream(lines: list[dict[str, Any]]) -> None:
    ts = [line["t"] for line in lines]

    assert ts == sorted(ts)
