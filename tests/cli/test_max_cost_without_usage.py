"""``--max-cost`` against servers that report no usage: it says at start which agents it
counts at an estimate, the progress says when an agent's server first reports none, and the
budget halts the run when the estimate reaches it, instead of counting nothing and letting
the run spend without limit.

Real sockets: no ``autojump_clock``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import yaml

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, conclave_process
from tests.cli.test_real_backends import RUN_LIMIT, _panel_config, _without_usage
from tests.llm.loopback import LoopbackServer, Recorded, Reply, open_loopback_server


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:
        running.handler = _without_usage
        yield running


def _quiet_panel(tmp_path: Path, server: LoopbackServer) -> Path:
    """The panel's two openai agents (alice, bob), priced at $3 / $15 per million tokens,
    asking their server for no usage."""
    config = _panel_config(tmp_path / "panel.yaml", server)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["agents"] = [a for a in data["agents"] if a["backend"]["type"] == "openai"]
    for agent in data["agents"]:
        agent["backend"]["stream_usage"] = False
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    return config


async def test_max_cost_halts_a_run_whose_server_reports_no_usage_at_the_estimate(
    server: LoopbackServer, tmp_path: Path
) -> None:
    # An answer call sends some 1,000 characters and receives some 50: about 320 + 18
    # tokens, $0.0012 at the estimate, so the two answers pass $0.002; the complete run
    # makes five calls. Calls after the two answers are answered a second late,
    # so the halt the answers cause lands before any of them ends, however loaded the machine.
    async def late_after_the_answers(request: Recorded) -> Reply:
        if len(server.requests) > 2:
            await trio.sleep(1)
        return _without_usage(request)

    server.handler = late_after_the_answers
    done = await conclave_process(
        "run", "--config", str(_quiet_panel(tmp_path, server)), "--output-format", "json",
        "--max-cost", "0.002", TASK, cwd=tmp_path, limit=RUN_LIMIT)  # fmt: skip

    result = json.loads(done.stdout)
    assert done.returncode == ExitCode.TIMEOUT, done.stderr.decode()
    assert result["termination"] == "max_cost"
    assert result["cost_usd"] is None  # what it really cost is still unknown
    assert result["usage"]["total"]["calls_without_usage"] >= 2
    assert len(server.requests) < 5


async def test_max_cost_says_at_start_that_it_counts_those_calls_at_an_estimate(
    server: LoopbackServer, tmp_path: Path
) -> None:
    done = await conclave_process(
        "run", "--config", str(_quiet_panel(tmp_path, server)), "--max-cost", "100", TASK,
        cwd=tmp_path, limit=RUN_LIMIT)  # fmt: skip

    assert done.returncode == ExitCode.OK, done.stderr.decode()
    first = done.stderr.decode().splitlines()[:3]
    assert (
        "conclave: --max-cost cannot read what the calls of 2 agents (alice, bob) use: "
        "stream_usage is false, so the server reports no usage; they count at an estimate of "
        "a token per 3 characters sent or received"
    ) in first


async def test_the_first_call_without_usage_of_each_agent_is_said_as_it_happens(
    server: LoopbackServer, tmp_path: Path
) -> None:
    done = await conclave_process(
        "run", "--config", str(_quiet_panel(tmp_path, server)), TASK,
        cwd=tmp_path, limit=RUN_LIMIT)  # fmt: skip

    assert done.returncode == ExitCode.OK, done.stderr.decode()
    said = [line for line in done.stderr.decode().splitlines() if "reports no usage" in line]
    agents = [line.split("] ", 1)[1].split("'s server", 1)[0] for line in said]
    assert sorted(agents) == ["alice", "bob"]  # once each, though each made several calls
    for line, agent in zip(said, agents, strict=True):
        assert line.endswith(
            f"] {agent}'s server reports no usage: its tokens and cost are unknown (--max-cost "
            "counts its calls at an estimate, a token per 3 characters)"
        )
