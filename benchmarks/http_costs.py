"""Where the ``http`` scenario's client time goes: start-up and exit by import, and one
request's client CPU layer by layer (part of ``conclave bench --scenario http``).

* **Start-up**: fresh processes that import Conclave's run machinery, the ``openai`` SDK, or
  nothing; each prints the time as its last act, so the process's wall splits into running
  the script and tearing the interpreter down (freeing every module) after it.
* **A streamed reply**: a first-round request of that run answered with a new answer of
  about :data:`STREAMED_TOKENS` tokens, streamed one token per chunk as a model streams;
  the client's CPU per token (per chunk).
* **A request**: the biggest request of a scripted N = 50 run (a vote prompt showing every
  answer), sent again and again to :mod:`benchmarks.http_server` in its own process (replying
  at once), through successively thinner layers: Conclave's backend (on its own HTTP/1.1
  connections, and through ``httpx2`` as when a proxy is configured), the SDK's streaming
  ``create``, the SDK's request transform alone, a bare ``httpx2`` stream decoding each chunk
  with ``json.loads``, and the floor: the same bytes written on one socket and the reply read
  whole. Only this process's CPU is counted.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import attrs
import trio
import trio.testing

from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.actors.run.driver import RunSpec, run
from conclave.benchmarks.http_server import model_name, open_server_process
from conclave.benchmarks.load_bench import TASK, Case
from conclave.config.schema import AgentConfig, ScriptedBackendConfig
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret

__all__ = [
    "LAYERS",
    "STREAMED_TOKENS",
    "answer_request",
    "biggest_request",
    "request_costs",
    "startup_costs",
    "token_costs",
]

STREAMED_TOKENS = 500
"""About how long the streamed reply is, in tokens."""

STARTUP = (
    ("python, nothing imported", "pass"),
    ("Conclave's run machinery", "import conclave.actors.run.driver"),
    ("the openai SDK (no longer imported by Conclave)", "import openai"),
    ("Conclave's openai backend", "import conclave.actors.llm.openai_backend"),
)
"""What each start-up process imports: label, code."""


def _one_startup(code: str) -> tuple[float, float]:
    """(seconds to run ``code`` from spawn, seconds to exit after it)."""
    began = time.time()
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport time\nprint(time.time())"],
        check=True,
        capture_output=True,
        text=True,
    )
    ended = time.time()
    finished = float(done.stdout.split()[-1])
    return finished - began, ended - finished


def startup_costs(repeats: int = 3) -> list[dict[str, Any]]:
    """Median seconds to import and to exit, per row of :data:`STARTUP`."""
    rows = []
    for label, code in STARTUP:
        runs = [_one_startup(code) for _ in range(repeats)]
        rows.append(
            {
                "imports": label,
                "run_s": round(statistics.median(r[0] for r in runs), 3),
                "exit_s": round(statistics.median(r[1] for r in runs), 3),
            }
        )
    return rows


def _prompt_chars(request: CompletionRequest) -> int:
    return sum(len(m.content) for m in request.messages)


class _Recording:
    """A scripted backend that keeps every request it is asked."""

    def __init__(self, inner: ScriptedBackend, seen: list[CompletionRequest]) -> None:
        self._inner = inner
        self._seen = seen

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self._seen.append(request)
        return await self._inner.complete(request, sink=sink)


@cache
def _recorded(agents: int) -> tuple[CompletionRequest, ...]:
    """Every request of a scripted run of ``agents`` (run on a virtual clock), in order."""
    seen: list[CompletionRequest] = []

    def factory(agent: AgentConfig) -> LLMBackend:
        policy = agent.backend
        assert isinstance(policy, ScriptedBackendConfig)
        return _Recording(ScriptedBackend(agent_id=agent.id, persona="", policy=policy), seen)

    spec = RunSpec(task=TASK, config=Case(agents=agents, latency=0.2).config())
    trio.run(
        run,
        attrs.evolve(spec, backend_factory=factory),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    return tuple(seen)


def biggest_request(agents: int = 50) -> CompletionRequest:
    """The biggest request of a scripted run of ``agents``."""
    return max(_recorded(agents), key=_prompt_chars)


def answer_request(agents: int = 50) -> CompletionRequest:
    """The smallest request of a scripted run of ``agents``: a first round's, which the
    script answers with a new answer."""
    return min(_recorded(agents), key=_prompt_chars)


async def _cpu_per_call(call: Callable[[], Awaitable[object]], repeats: int) -> tuple[float, float]:
    """Milliseconds of this process's CPU for the first ``call`` (what the SDK builds lazily
    is paid there) and per call after it."""
    cpu = time.process_time()
    await call()
    first = time.process_time() - cpu
    cpu = time.process_time()
    for _ in range(repeats):
        await call()
    return first * 1000, (time.process_time() - cpu) / repeats * 1000


LAYERS = (
    "Conclave's backend (pool, its own HTTP/1.1 connections, chunks as dicts, reply by hand)",
    "Conclave's backend through httpx2 (as when a proxy is configured)",
    "the SDK: chat.completions.create(stream=True), chunks iterated",
    "the SDK's request transform alone (async_maybe_transform)",
    "the SDK's client.post: no transform, chunks as typed models",
    "the SDK's client.post: no transform, chunks as plain dicts",
    "httpx2 alone: POST, stream, json.loads per chunk",
    "the floor: the request written on one socket, the reply read whole, orjson per chunk",
)
"""From the whole path down to the socket. Conclave's backend goes through neither the SDK
nor ``httpx2`` (:mod:`actors.llm.http1`) unless a proxy is configured; the SDK's rows say what
it would cost, whole or without its transform and chunk models."""


async def _layers(request: CompletionRequest, url: str, repeats: int) -> list[tuple[float, float]]:
    import httpx2
    import openai
    from openai._utils import async_maybe_transform
    from openai.types.chat import ChatCompletionChunk, completion_create_params

    from conclave.actors.llm.openai_backend import OpenAIProvider
    from conclave.actors.llm.pool import open_backends

    key = "sk-bench-loopback"
    backend_config = OpenAIBackendConfig(
        model=model_name("a0", 0), base_url=url, api_key=Secret(key)
    )
    agent = AgentConfig(id="a0", backend=backend_config)
    costs = []
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        costs.append(await _cpu_per_call(lambda: backend.complete(request), repeats))
        # The very body Conclave sends (a private method, read here so the layers below
        # send the same bytes).
        body: dict[str, Any] = backend.inner._arguments(request)  # type: ignore[attr-defined]
    # A provider told of a proxy sends through httpx2, which reads the real environment
    # (no proxy there) and so goes straight to the server.
    proxied = OpenAIProvider(environ={"HTTPS_PROXY": "http://proxy.invalid:3128"})
    async with AsyncExitStack() as stack:
        endpoint = await proxied.open_endpoint(agent, stack)
        through_httpx2 = endpoint.backend_for(agent)
        costs.append(await _cpu_per_call(lambda: through_httpx2.complete(request), repeats))
    body = {k: v for k, v in body.items() if k not in ("timeout", "stream")}
    async with openai.AsyncOpenAI(
        api_key=key, base_url=url, http_client=httpx2.AsyncClient()
    ) as sdk:

        async def create() -> None:
            stream = await sdk.chat.completions.create(stream=True, **body)
            async with stream:
                async for _ in stream:
                    pass

        costs.append(await _cpu_per_call(create, repeats))
        params = completion_create_params.CompletionCreateParamsStreaming
        costs.append(
            await _cpu_per_call(
                lambda: async_maybe_transform({**body, "stream": True}, params), repeats
            )
        )
        for chunk_type in (ChatCompletionChunk, dict):

            async def post(cast: Any = chunk_type) -> None:
                stream = await sdk.post(
                    "/chat/completions",
                    body={**body, "stream": True},
                    cast_to=cast,
                    stream=True,
                    stream_cls=openai.AsyncStream[cast],
                )
                async with stream:
                    async for _ in stream:
                        pass

            costs.append(await _cpu_per_call(post, repeats))
    async with httpx2.AsyncClient() as http:
        wire = {**body, "stream": True}

        async def bare() -> None:
            async with http.stream("POST", f"{url}/chat/completions", json=wire) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        json.loads(line[6:])

        costs.append(await _cpu_per_call(bare, repeats))
    costs.append(await _cpu_per_call(await _on_one_socket(url, {**body, "stream": True}), repeats))
    return costs


async def _on_one_socket(url: str, body: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    """One request the least a client can do: a hand-written request on one open socket,
    the reply read until its last chunk, each event decoded with ``orjson``."""
    import orjson

    parts = urlsplit(url)
    stream = await trio.open_tcp_stream(parts.hostname or "127.0.0.1", parts.port or 80)
    head = (
        f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    ).encode()

    async def call() -> None:
        data = orjson.dumps(body)
        await stream.send_all(head % len(data) + data)
        reply = b""
        while not reply.endswith(b"\r\n0\r\n\r\n"):
            reply += await stream.receive_some(65536)
        for line in reply.split(b"\n"):
            if line.startswith(b"data: {"):
                orjson.loads(line[6:])

    return call


def request_costs(repeats: int = 300) -> list[dict[str, Any]]:
    """Client CPU per request, per layer of :data:`LAYERS`, against the server in its own
    process replying at once."""
    request = biggest_request()
    size = _prompt_chars(request)
    with open_server_process(latency=0.0, jitter=0.0) as server:
        costs = trio.run(_layers, request, server.url, repeats)
    return [
        {
            "layer": layer,
            "prompt_chars": size,
            "first_call_cpu_ms": round(first, 2),
            "client_cpu_ms_per_request": round(ms, 2),
        }
        for layer, (first, ms) in zip(LAYERS, costs, strict=True)
    ]


class _Counting:
    """A sink that counts the pieces a reply streams."""

    def __init__(self) -> None:
        self.pieces = 0

    def text(self, delta: str) -> None:
        self.pieces += 1

    def reasoning(self, delta: str) -> None:
        self.pieces += 1

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        self.pieces += 1

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        return None


async def _streamed(request: CompletionRequest, url: str, repeats: int) -> tuple[float, int]:
    from conclave.actors.llm.pool import open_backends

    agent = AgentConfig(
        id="a0",
        backend=OpenAIBackendConfig(
            model=model_name("a0", 0), base_url=url, api_key=Secret("sk-bench-loopback")
        ),
    )
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        counted = _Counting()
        await backend.complete(request, sink=counted)
        _, ms = await _cpu_per_call(lambda: backend.complete(request, sink=_Counting()), repeats)
    return ms, counted.pieces


def token_costs(repeats: int = 30) -> dict[str, Any]:
    """Client CPU per streamed token: a first-round request of a scripted N = 50 run, its
    reply (a new answer of about :data:`STREAMED_TOKENS` tokens) streamed one token per
    chunk by the server in its own process, replying at once."""
    request = answer_request()
    with open_server_process(
        latency=0.0, jitter=0.0, answer_tokens=STREAMED_TOKENS, token_chunks=True
    ) as server:
        ms, pieces = trio.run(_streamed, request, server.url, repeats)
    return {
        "streamed_pieces": pieces,
        "client_cpu_ms_per_reply": round(ms, 3),
        "client_cpu_us_per_token": round(ms * 1000 / max(pieces, 1), 2),
    }
