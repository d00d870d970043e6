"""HTTP backends in the backend pool, against a real server: one client per endpoint and key,
the endpoint's limits shared by its agents, and cancellation that leaks nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from conclave.actors.llm.errors import TransientLLMError
from conclave.actors.llm.pool import open_backends
from conclave.actors.llm.protocol import LLMBackend
from conclave.config.schema import AgentConfig
from conclave.config.secret import Secret
from tests.llm.helpers import Recorder, anthropic_agent, ask, openai_agent
from tests.llm.loopback import (
    JsonReply,
    LoopbackServer,
    Pause,
    Recorded,
    SseReply,
    Stall,
)
from tests.llm.wire import (
    anthropic_error,
    anthropic_events,
    anthropic_reply,
    openai_chunk,
    openai_error,
    openai_reply,
)

AgentMaker = Callable[..., AgentConfig]
PROTOCOLS = [pytest.param(openai_agent, id="openai"), pytest.param(anthropic_agent, id="anthropic")]


def _answer(make: AgentMaker, text: str = "ok") -> SseReply:
    if make is openai_agent:
        return SseReply(parts=tuple(openai_reply(text)))
    return anthropic_reply(text)


def _first_delta_then_stall(make: AgentMaker) -> SseReply:
    if make is openai_agent:
        return SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}), Stall()))
    start = anthropic_events([{"type": "text", "text": ["Hi"]}])[:3]
    return SseReply(parts=(*start, Stall()))


async def _idle(server: LoopbackServer) -> None:
    """Until every connection is closed (fails after 2 s)."""
    with trio.fail_after(2.0):
        await server.wait_for(lambda s: s.open_connections == 0)


@pytest.mark.parametrize("make", PROTOCOLS)
async def test_agents_on_one_endpoint_share_one_client_and_its_connection(
    server: LoopbackServer, make: AgentMaker
) -> None:
    server.handler = lambda _request: _answer(make)
    async with open_backends() as pool:
        for agent_id in ("alice", "bob", "carol"):
            backend = await pool.backend(make(server, agent_id))
            await backend.complete(ask())
        assert pool.statistics().endpoints == 1
    assert len(server.requests) == 3
    assert server.connections_accepted == 1


async def test_agents_with_different_keys_get_different_clients(server: LoopbackServer) -> None:
    async with open_backends() as pool:
        await pool.backend(openai_agent(server, "alice", api_key=Secret("sk-key-one-123456")))
        await pool.backend(openai_agent(server, "bob", api_key=Secret("sk-key-two-123456")))
        await pool.backend(openai_agent(server, "carol", api_key=Secret("sk-key-two-123456")))
        assert pool.statistics().endpoints == 2


async def _cancel_after_first_delta(backend: LLMBackend) -> None:
    """Start a call and cancel it as soon as its first text delta arrives."""
    with trio.CancelScope() as scope:

        class CancelOnText(Recorder):
            def text(self, delta: str) -> None:
                scope.cancel()

        await backend.complete(ask(), sink=CancelOnText())
    assert scope.cancelled_caught


@pytest.mark.parametrize("make", PROTOCOLS)
async def test_a_cancelled_stream_is_closed_at_once_and_the_client_stays_usable(
    server: LoopbackServer, make: AgentMaker
) -> None:
    server.script(_first_delta_then_stall(make), _answer(make, "still here"))
    async with open_backends() as pool:
        backend = await pool.backend(make(server))
        await _cancel_after_first_delta(backend)
        await _idle(server)
        completion = await backend.complete(ask())
    assert completion.message.content == "still here"


async def test_a_thousand_cancelled_streams_leak_no_connection(server: LoopbackServer) -> None:
    server.handler = lambda _request: _first_delta_then_stall(openai_agent)
    agents = [openai_agent(server, f"agent{i}", max_concurrency=16) for i in range(16)]
    async with open_backends() as pool:
        backends = [await pool.backend(agent) for agent in agents]

        async def cancel_many(backend: LLMBackend, times: int) -> None:
            for _ in range(times):
                await _cancel_after_first_delta(backend)

        async with trio.open_nursery() as nursery:
            for backend in backends:
                nursery.start_soon(cancel_many, backend, 1000 // len(backends))
        await _idle(server)
        assert len(server.requests) == 1000 // len(backends) * len(backends)
        assert pool.statistics().calls_in_flight == 0
        server.handler = lambda _request: _answer(openai_agent, "after a thousand")
        completion = await backends[0].complete(ask())
    assert completion.message.content == "after a thousand"


async def test_max_concurrency_bounds_the_calls_an_endpoint_serves_at_once(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: SseReply(parts=(Pause(0.2), *openai_reply("ok")))
    async with open_backends() as pool:
        backends = [
            await pool.backend(openai_agent(server, f"agent{i}", max_concurrency=3))
            for i in range(8)
        ]
        async with trio.open_nursery() as nursery:
            for backend in backends:
                nursery.start_soon(backend.complete, ask())
    assert len(server.requests) == 8
    assert server.peak_in_flight == 3


async def test_one_429_holds_back_every_agent_on_the_endpoint(server: LoopbackServer) -> None:
    arrivals: list[tuple[str, float]] = []

    def reply(request: Recorded) -> Any:
        arrivals.append((request.headers["x-stainless-retry-count"], trio.current_time()))
        if len(arrivals) == 1:
            return openai_error(429, "slow down", **{"retry-after": "0.5"})
        return _answer(openai_agent)

    server.handler = reply
    async with open_backends() as pool:
        alice = await pool.backend(openai_agent(server, "alice", max_retries=1))
        bob = await pool.backend(openai_agent(server, "bob", max_retries=1))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(alice.complete, ask())
            with trio.fail_after(2.0):
                await server.wait_for(lambda s: len(s.requests) == 1)
            await trio.sleep(0.05)
            nursery.start_soon(bob.complete, ask())
    refused_at = arrivals[0][1]
    later = [at for _count, at in arrivals[1:]]
    assert len(later) == 2
    assert all(at - refused_at >= 0.45 for at in later)


async def test_requests_per_minute_are_counted_across_the_agents_of_an_endpoint(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: _answer(openai_agent)
    async with open_backends() as pool:
        for agent_id in ("alice", "bob"):
            backend = await pool.backend(openai_agent(server, agent_id, requests_per_minute=10))
            await backend.complete(ask())
        gate = backend.inner.gate  # type: ignore[attr-defined]
        assert gate.statistics().requests_in_window == 2


async def test_a_json_reply_where_a_stream_was_expected_is_a_failed_try(
    server: LoopbackServer,
) -> None:
    server.script(JsonReply(body={"unexpected": True}))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        with pytest.raises(TransientLLMError, match=r"agent 'alice'.*no finish_reason"):
            await backend.complete(ask())


@pytest.mark.parametrize("make", PROTOCOLS)
async def test_agents_sharing_an_endpoint_keep_their_own_retry_settings(
    server: LoopbackServer, make: AgentMaker
) -> None:
    busy = {"retry-after": "0.05"}
    server.handler = lambda _request: (
        openai_error(503, "busy", **busy)
        if make is openai_agent
        else anthropic_error(503, "api_error", "busy", **busy)
    )
    async with open_backends() as pool:
        patient = await pool.backend(make(server, "patient", max_retries=2))
        hasty = await pool.backend(make(server, "hasty", max_retries=0))
        assert pool.statistics().endpoints == 1
        for backend in (patient, hasty):
            with pytest.raises(TransientLLMError):
                await backend.complete(ask())
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "2", "0"]
