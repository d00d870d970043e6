"""A panel on a real OpenAI-compatible server whose model gives every agent the same answer
(a deterministic model: temperature 0, the same prompt): every agent stays in and votes.

The server is the benchmarks' scripted server on loopback, reached through the real SDK
over real sockets (no autojump clock: the SDK's timeouts are real)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from conclave.actors.coordination.events import VoteAdded
from conclave.actors.run.driver import RunSpec, run
from conclave.benchmarks.http_server import ScriptedServer, loopback_panel, serve
from conclave.runtime import MemoryTap

SAME = "Hold papers together, pick a simple lock, reset a router."


@asynccontextmanager
async def same_answer_server() -> AsyncIterator[tuple[ScriptedServer, str]]:
    server = ScriptedServer(latency=0.05, jitter=0.5, answer_text=SAME)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, server)
        yield server, f"http://127.0.0.1:{port}/v1"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("n", [3, 50])
async def test_a_panel_whose_model_gives_everyone_the_same_answer_stays_in_and_votes(
    n: int,
) -> None:
    tap = MemoryTap()
    async with same_answer_server() as (server, url):
        with trio.fail_after(60):
            result = await run(
                RunSpec(task="Name three uses of a paperclip", config=loopback_panel(n, url)),
                taps=[tap],
            )

    assert result.termination == "completed"
    assert result.failed_agents == {}
    [only] = result.answers
    assert result.votes == {f"a{i}": only.label for i in range(1, n + 1)}
    assert sum(1 for v in tap.of_type(VoteAdded) if v.same_answer) == n - 1
    assert result.final_answer == SAME
    # Every round's request asked the server for a tool call.
    assert server.stats.tool_choices == {"required": server.stats.completions - 1}
