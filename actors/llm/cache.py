"""A response cache: identical requests by the same agent to the same backend reuse the
recorded reply, so re-running a graded batch is reproducible and costs nothing.

The key is the SHA-256 of :data:`KEY_VERSION`, the :data:`cache_scope` (a batch's epoch),
the agent's id, its backend config (API keys left out: each is its mask) and the request
(messages, tools, tool choice, output limit, purpose), as canonical JSON. The agent's id is
in the key so that two agents of one panel keep their own replies (their diversity) even
when their prompts are equal.

A reply is recorded only when the call succeeded; a cached reply is returned with zero
usage, so it counts no tokens and no cost. Entries are files (``<key[:2]>/<key>.json``)
written to a temporary name and renamed, so a reader never sees half an entry and
concurrent writers (worker processes) of one key leave one whole file. An entry that cannot
be read (cut short, another version's) is a miss, and is written again.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from pathlib import Path
from typing import Any

import attrs
import trio
from cattrs.errors import BaseValidationError

from conclave.actors.llm.protocol import (
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMBackend,
    Usage,
)
from conclave.config.atomic_file import write_atomically
from conclave.config.canonical import canonical_json
from conclave.config.schema import AgentConfig
from conclave.runtime.codec import converter

__all__ = ["KEY_VERSION", "CacheStatistics", "CachedBackend", "ResponseCache", "cache_scope"]

KEY_VERSION = 1
"""Part of every key: raised when what a key covers changes, so old entries stop matching."""

cache_scope: contextvars.ContextVar[str] = contextvars.ContextVar("cache_scope", default="")
"""Part of every key: set around a run (its tasks inherit it) to keep apart replies that
must differ although their requests are equal, such as the epochs of a batch's task: each
epoch is a fresh sample, and a re-run reuses each epoch's own."""


@attrs.frozen(kw_only=True)
class CacheStatistics:
    hits: int
    misses: int


class ResponseCache:
    """The entries under ``root`` (created if missing), and this process's hits and misses."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._hits = 0
        self._misses = 0

    def key(self, agent: AgentConfig, request: CompletionRequest) -> str:
        text = canonical_json(
            {
                "v": KEY_VERSION,
                "scope": cache_scope.get(),
                "agent": agent.id,
                "backend": agent.backend,
                "request": request,
            }
        )
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def statistics(self) -> CacheStatistics:
        return CacheStatistics(hits=self._hits, misses=self._misses)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _read(self, key: str) -> Completion | None:
        try:
            data: Any = json.loads(self._path(key).read_bytes())
            return converter.structure(data, Completion)
        except (OSError, ValueError, TypeError, KeyError, BaseValidationError):
            return None

    def _write(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(converter.unstructure(completion)))

    async def lookup(self, key: str) -> Completion | None:
        """The recorded reply for ``key``; counts a hit or a miss. File access runs in a
        thread; cancelled, the lookup is abandoned (nothing was changed)."""
        found = await trio.to_thread.run_sync(self._read, key)
        if found is None:
            self._misses += 1
        else:
            self._hits += 1
        return found

    async def record(self, key: str, completion: Completion) -> None:
        """Keep ``completion`` under ``key``; a failing disk costs the entry, not the call.
        Cancelled, the rename either happened (a whole entry) or did not."""
        with contextlib.suppress(OSError):
            await trio.to_thread.run_sync(self._write, key, completion)


class CachedBackend:
    """``inner`` behind the cache, for one agent."""

    def __init__(self, inner: LLMBackend, cache: ResponseCache, agent: AgentConfig) -> None:
        self._inner = inner
        self._cache = cache
        self._agent = agent

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        key = self._cache.key(self._agent, request)
        found = await self._cache.lookup(key)
        if found is not None:
            if sink is not None and found.message.content:
                sink.text(found.message.content)
            return attrs.evolve(found, usage=Usage())
        completion = await self._inner.complete(request, sink=sink)
        await self._cache.record(key, completion)
        return completion
