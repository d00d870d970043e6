"""Backend pools: who owns the LLM clients, and how many calls each endpoint may take at once.

``async with open_backends() as pool`` owns one client per endpoint, shared by every agent
that talks to it (one connection pool per server, not one per agent), and a per-endpoint
concurrency limit. A run opens its own pool unless it is handed one that outlives it: the
REPL, batch runs and the server keep one pool for many runs, so connections stay warm.

Providers register by backend type and are imported only when a config uses them, so the
cost of importing one (the anthropic SDK's import is most of a second) is paid only by runs
that need it.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import AsyncIterator, Hashable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Protocol

import attrs
import trio

from conclave.actors.llm.cache import CachedBackend, ResponseCache
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.config.schema import AgentConfig

__all__ = [
    "BackendPool",
    "Endpoint",
    "PoolStatistics",
    "Provider",
    "UnknownBackendType",
    "open_backends",
]


class Endpoint(Protocol):
    """One server (or, for the scripted backend, one agent's script): makes backends."""

    def backend_for(self, agent: AgentConfig) -> LLMBackend: ...


class Provider(Protocol):
    """Knows one backend type: which endpoint an agent's config names, and how to open it."""

    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        """Agents whose keys are equal share one endpoint (one client)."""
        ...

    async def open_endpoint(self, agent: AgentConfig, stack: AsyncExitStack) -> Endpoint:
        """Open the endpoint's client; register its cleanup on ``stack``."""
        ...

    def concurrency(self, agent: AgentConfig) -> float:
        """Calls the endpoint may serve at once (``math.inf``: no limit)."""
        ...


PROVIDERS: dict[str, str] = {
    "scripted": "conclave.actors.llm.scripted_provider:PROVIDER",
    "openai": "conclave.actors.llm.openai_backend:PROVIDER",
    "anthropic": "conclave.actors.llm.anthropic_backend:PROVIDER",
}
"""Backend type → ``module:attribute`` of its provider, imported on first use."""


class UnknownBackendType(ValueError):
    def __init__(self, kind: str) -> None:
        known = ", ".join(sorted(PROVIDERS))
        super().__init__(f"backend type {kind!r} is not available; valid backend types: {known}")


def _provider(kind: str) -> Provider:
    target = PROVIDERS.get(kind)
    if target is None:
        raise UnknownBackendType(kind)
    module, _, attribute = target.partition(":")
    provider: Provider = getattr(importlib.import_module(module), attribute)
    return provider


@attrs.frozen(kw_only=True)
class PoolStatistics:
    endpoints: int
    backends: int
    calls_in_flight: int
    calls_waiting: int
    """Calls queued behind an endpoint's concurrency limit."""


class _Limited:
    """An agent's backend behind its endpoint's concurrency limit."""

    def __init__(self, backend: LLMBackend, limiter: trio.CapacityLimiter | None) -> None:
        self._backend = backend
        self._limiter = limiter

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if self._limiter is None:
            return await self._backend.complete(request, sink=sink)
        async with self._limiter:
            return await self._backend.complete(request, sink=sink)

    @property
    def inner(self) -> LLMBackend:
        return self._backend


class BackendPool:
    """Use through :func:`open_backends`. Backends are made on first request and kept for the
    pool's lifetime, so an agent keeps its backend across turns and runs."""

    def __init__(self, stack: AsyncExitStack, cache: ResponseCache | None = None) -> None:
        self._stack = stack
        self._cache = cache
        self._endpoints: dict[tuple[str, Hashable], tuple[Endpoint, trio.CapacityLimiter | None]]
        self._endpoints = {}
        self._backends: dict[AgentConfig, LLMBackend] = {}
        self._providers: dict[str, Provider] = {}
        """By backend type, once looked up: ``import_module`` of a module already loaded
        still cost each agent of a 1,000-agent run 12 µs of its start."""
        self._closed = False

    async def backend(self, agent: AgentConfig) -> LLMBackend:
        """The backend for ``agent``: its endpoint is opened on first use and then shared."""
        if self._closed:
            raise RuntimeError("the backend pool is closed; open a new one with open_backends()")
        key = agent
        existing = self._backends.get(key)
        if existing is not None:
            return existing
        kind = agent.backend.type
        provider = self._providers.get(kind)
        if provider is None:
            provider = self._providers[kind] = _provider(kind)
        endpoint_key = (kind, provider.endpoint_key(agent))
        opened = self._endpoints.get(endpoint_key)
        if opened is None:
            endpoint = await provider.open_endpoint(agent, self._stack)
            limit = provider.concurrency(agent)
            limiter = None if math.isinf(limit) else trio.CapacityLimiter(limit)
            opened = self._endpoints[endpoint_key] = (endpoint, limiter)
        endpoint, limiter = opened
        backend: LLMBackend = _Limited(endpoint.backend_for(agent), limiter)
        if self._cache is not None:  # outermost: a hit waits for no endpoint slot
            backend = CachedBackend(backend, self._cache, agent)
        self._backends[key] = backend
        return backend

    def statistics(self) -> PoolStatistics:
        limiters = [limiter for _, limiter in self._endpoints.values() if limiter is not None]
        return PoolStatistics(
            endpoints=len(self._endpoints),
            backends=len(self._backends),
            calls_in_flight=sum(limiter.borrowed_tokens for limiter in limiters),
            calls_waiting=sum(limiter.statistics().tasks_waiting for limiter in limiters),
        )

    def _close(self) -> None:
        self._closed = True


@asynccontextmanager
async def open_backends(*, cache: ResponseCache | None = None) -> AsyncIterator[BackendPool]:
    """A pool for the duration of the block; leaving it closes every client it opened
    (in reverse order of opening), also when the block is cancelled. With ``cache``, every
    backend answers from it what it recorded (:mod:`actors.llm.cache`)."""
    async with AsyncExitStack() as stack:
        pool = BackendPool(stack, cache)
        try:
            yield pool
        finally:
            pool._close()
