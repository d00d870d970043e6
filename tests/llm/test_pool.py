"""Backend pools: shared clients per endpoint, per-endpoint concurrency, lifetimes."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator
from contextlib import AsyncExitStack
from typing import Any, cast

import attrs
import pytest
import trio

from conclave.actors.llm import pool as pool_module
from conclave.actors.llm.pool import UnknownBackendType, open_backends
from conclave.actors.llm.protocol import ChatMessage, Completion, CompletionRequest, CompletionSink
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.config.schema import AgentConfig, ScriptedBackendConfig


@attrs.frozen(kw_only=True)
class FakeServerConfig:
    type: str = "fake"
    server: str
    limit: float = math.inf


class FakeClient:
    def __init__(self, server: str, journal: list[str]) -> None:
        self.server = server
        self.journal = journal
        self.in_flight = 0
        self.peak = 0

    async def aclose(self) -> None:
        self.journal.append(f"closed {self.server}")


class FakeBackend:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.client.in_flight += 1
        self.client.peak = max(self.client.peak, self.client.in_flight)
        try:
            await trio.sleep(1.0)
        finally:
            self.client.in_flight -= 1
        return Completion(message=ChatMessage(role="assistant", content="ok"))


class FakeEndpoint:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def backend_for(self, agent: AgentConfig) -> FakeBackend:
        return FakeBackend(self.client)


class FakeProvider:
    def __init__(self) -> None:
        self.journal: list[str] = []
        self.clients: list[FakeClient] = []

    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        return cast(FakeServerConfig, agent.backend).server

    async def open_endpoint(self, agent: AgentConfig, stack: AsyncExitStack) -> FakeEndpoint:
        client = FakeClient(cast(FakeServerConfig, agent.backend).server, self.journal)
        self.clients.append(client)
        stack.push_async_callback(client.aclose)
        return FakeEndpoint(client)

    def concurrency(self, agent: AgentConfig) -> float:
        return cast(FakeServerConfig, agent.backend).limit


FAKE = FakeProvider()


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    provider = FakeProvider()
    global FAKE
    FAKE = provider
    pool_module.PROVIDERS["fake"] = f"{__name__}:FAKE"
    yield provider
    del pool_module.PROVIDERS["fake"]


def agent(agent_id: str, server: str, limit: float = math.inf) -> AgentConfig:
    backend: Any = FakeServerConfig(server=server, limit=limit)
    return AgentConfig(id=agent_id, backend=backend)


REQUEST = CompletionRequest(messages=(ChatMessage(role="user", content="hi"),))


async def test_agents_on_one_endpoint_share_one_client(fake: FakeProvider) -> None:
    async with open_backends() as pool:
        await pool.backend(agent("a", "server1"))
        await pool.backend(agent("b", "server1"))
        await pool.backend(agent("c", "server2"))
        assert [c.server for c in fake.clients] == ["server1", "server2"]
        assert pool.statistics().endpoints == 2
        assert pool.statistics().backends == 3


async def test_an_agent_keeps_its_backend_for_the_pools_lifetime(fake: FakeProvider) -> None:
    async with open_backends() as pool:
        first = await pool.backend(agent("a", "server1"))
        assert await pool.backend(agent("a", "server1")) is first


async def test_an_endpoint_serves_no_more_calls_at_once_than_its_limit(
    fake: FakeProvider, autojump_clock: trio.abc.Clock
) -> None:
    async with open_backends() as pool:
        backends = [await pool.backend(agent(f"a{i}", "server1", limit=2)) for i in range(5)]
        async with trio.open_nursery() as nursery:
            for backend in backends:
                nursery.start_soon(backend.complete, REQUEST)
            await trio.sleep(0.5)
            assert pool.statistics().calls_in_flight == 2
            assert pool.statistics().calls_waiting == 3
    assert fake.clients[0].peak == 2
    assert trio.current_time() == pytest.approx(3.0)


async def test_leaving_the_pool_closes_every_client_newest_first(fake: FakeProvider) -> None:
    async with open_backends() as pool:
        await pool.backend(agent("a", "server1"))
        await pool.backend(agent("b", "server2"))
    assert fake.journal == ["closed server2", "closed server1"]


async def test_a_cancelled_pool_still_closes_its_clients(fake: FakeProvider) -> None:
    with trio.CancelScope() as scope:
        async with open_backends() as pool:
            await pool.backend(agent("a", "server1"))
            scope.cancel()
            await trio.sleep_forever()
    assert fake.journal == ["closed server1"]


async def test_a_closed_pool_refuses_new_backends(fake: FakeProvider) -> None:
    async with open_backends() as pool:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        await pool.backend(agent("a", "server1"))


async def test_an_unknown_backend_type_names_the_valid_ones() -> None:
    async with open_backends() as pool:
        with pytest.raises(
            UnknownBackendType, match="valid backend types: anthropic, openai, scripted"
        ):
            await pool.backend(agent("a", "server1"))


async def test_the_scripted_provider_gives_each_agent_its_own_script() -> None:
    config = ScriptedBackendConfig(seed=4)
    async with open_backends() as pool:
        one = await pool.backend(AgentConfig(id="a", backend=config))
        two = await pool.backend(AgentConfig(id="b", backend=config))
        assert pool.statistics().endpoints == 2
        reply = await one.complete(REQUEST)
    assert one is not two
    assert isinstance(getattr(one, "inner", None), ScriptedBackend)
    assert reply.message.role == "assistant"
