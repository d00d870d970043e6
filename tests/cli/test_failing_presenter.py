"""A presenter whose endpoint dies once coordination is over has ``failing_agent_grace``
to succeed, like any agent whose peers are all done; then the run ends with the winner's
answer as the final answer (``completed``, exit 0), ``presentation_error`` and the summary
saying why, instead of waiting out every try of the presentation.

Real sockets: no ``autojump_clock``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, conclave_process
from tests.cli.test_real_backends import RUN_LIMIT, _coordinate, _offered, _panel_config
from tests.llm.loopback import LoopbackServer, Recorded, Reply, open_loopback_server

FIRST_BYTE = 2
"""Seconds each presentation try waits for a reply (``timeouts.first_byte``)."""


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:
        running.handler = _presentation_hangs
        yield running


async def _presentation_hangs(request: Recorded) -> Reply:
    """Every agent answers and votes for alice (agent1); her presentation (a request that
    offers no tool) never gets a reply."""
    if not _offered(request):
        await trio.sleep_forever()
    return _coordinate(request)


async def test_a_presenter_whose_endpoint_is_dead_gives_way_to_the_winning_answer(
    server: LoopbackServer, tmp_path: Path
) -> None:
    config = _panel_config(
        tmp_path / "panel.yaml",
        server,
        timeouts={"connect": 5, "first_byte": FIRST_BYTE},
        orchestrator={"failing_agent_grace": 1},
    )

    done = await conclave_process(
        "run", "--config", str(config), "--output-format", "json", TASK,
        cwd=tmp_path, limit=RUN_LIMIT)  # fmt: skip

    result = json.loads(done.stdout)
    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert result["termination"] == "completed"
    assert (result["winner"], result["presenter"]) == ("alice", None)
    assert result["final_answer"] == "gpt-alice: use it as a bookmark"
    error = result["presentation_error"]
    assert "alice's LLM calls kept failing for 1s (orchestrator.failing_agent_grace)" in error
    assert f"no reply began within {FIRST_BYTE}s (timeouts.first_byte)" in error
    # The first try fails at 2 s and the grace is 1 s; the presentation's three tries
    # alone take 6 s and up to 3 s of waits between them.
    assert result["duration_s"] < 7.5, result["duration_s"]


async def test_the_summary_and_the_timeline_say_the_presentation_failed(
    server: LoopbackServer, tmp_path: Path
) -> None:
    config = _panel_config(
        tmp_path / "panel.yaml",
        server,
        timeouts={"connect": 5, "first_byte": FIRST_BYTE},
        orchestrator={"failing_agent_grace": 1},
    )

    done = await conclave_process(
        "run", "--config", str(config), TASK, cwd=tmp_path, limit=RUN_LIMIT
    )

    assert done.returncode == ExitCode.OK
    assert done.stdout.decode().strip() == "gpt-alice: use it as a bookmark"
    stderr = done.stderr.decode()
    assert "alice's presentation failed (the chosen answer stands verbatim): alice's" in stderr
    [summary] = [line for line in stderr.splitlines() if line.startswith("completed: ")]
    assert "; the presentation failed, the winning answer stands verbatim: alice's" in summary
