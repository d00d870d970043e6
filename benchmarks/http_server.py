"""An OpenAI-compatible Chat Completions server on loopback that answers as the scripted
backend would, for ``conclave bench --scenario http``.

Each request's ``model`` names the agent and its scripted seed (``<agent id>@<seed>``); the
server keeps one :class:`~actors.llm.scripted.ScriptedBackend` per model, hands it the request
as the agent's loop built it, waits its latency (200 ms ±50 % by default) and streams its
reply back as Chat Completions chunks (tool calls, text, finish, usage, ``[DONE]``). So a run
against it coordinates exactly as a scripted run does, through the real backend over real
sockets.

It runs in its own process (``python -m conclave.benchmarks.http_server``) so that its CPU is not
charged to the client being measured: it prints its port on the first line of stdout, serves
until its stdin closes, and answers ``GET /stats`` with what it has served. The listen
backlog is large: the kernel's queue must hold every agent's first connection at once (the
stdlib's 5 turns 20 concurrent streams from 0.2 s into 1.7 s; refused SYNs wait a second).
Tests and other benchmarks serve it in their own process with :func:`serve`.

What a real model does that the script does not, on request:

* ``answer_text``: every agent gives this answer, as a deterministic model (temperature 0,
  the same prompt) gives every agent the same one;
* ``answer_tokens``: every answer is padded to about this many tokens (answers of real
  length; the same answer stays the same);
* ``cache``: a :class:`~benchmarks.prompt_cache.PromptCache`. The usage then counts a
  prompt's tokens as the cache does (its tools and messages as JSON, 4 characters a token)
  and says how many were cached (``prompt_tokens_details.cached_tokens``), as OpenAI does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import trio

from conclave.actors.llm.protocol import (
    ChatMessage,
    Completion,
    CompletionRequest,
    ToolCall,
    ToolSchema,
    Usage,
)
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.benchmarks.prompt_cache import TOKEN_CHARS, PromptCache, prompt_text, tokens
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret

__all__ = [
    "BACKLOG",
    "ScriptedServer",
    "ServerProcess",
    "loopback_panel",
    "model_name",
    "open_server_process",
    "serve",
]

BACKLOG = 1024
"""Pending connections the kernel queues (at least 128; every agent connects at once)."""
_MAX_HEAD = 64 * 1024


def model_name(agent_id: str, seed: int) -> str:
    """The ``model`` a client sends for the scripted agent ``agent_id`` with ``seed``."""
    return f"{agent_id}@{seed}"


def loopback_panel(agents: int, url: str) -> ConclaveConfig:
    """``agents`` openai agents named ``a1``... on this server at ``url``, one scripted agent
    per model name, each allowed as many concurrent requests as there are agents."""
    return ConclaveConfig(
        agents=tuple(
            AgentConfig(
                id=f"a{i}",
                backend=OpenAIBackendConfig(
                    model=model_name(f"a{i}", i),
                    base_url=url,
                    api_key=Secret("sk-loopback"),
                    max_concurrency=agents,
                ),
            )
            for i in range(1, agents + 1)
        )
    )


@attrs.define
class Stats:
    requests: int = 0
    completions: int = 0
    connections: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    tool_choices: dict[str, int] = attrs.field(factory=dict)
    """How many requests with tools asked for each ``tool_choice`` (``none sent``: none)."""
    first_request_at: float | None = None
    """When the first Chat Completions request arrived (seconds since the epoch): a client's
    start-up ends there."""
    cpu_s: float = 0.0
    """The server process's CPU time so far: if it nears the run's wall time, the server,
    not the client, sets the pace."""


class ScriptedServer:
    """Answers Chat Completions requests as each model's scripted agent would (see the module
    docstring for ``answer_text``, ``answer_tokens`` and ``cache``)."""

    def __init__(
        self,
        *,
        latency: float,
        jitter: float,
        answer_text: str | None = None,
        answer_tokens: int | None = None,
        token_chunks: bool = False,
        cache: PromptCache | None = None,
    ) -> None:
        self._latency = latency
        self._jitter = jitter
        self._answer_text = answer_text
        self._answer_tokens = answer_tokens
        self._token_chunks = token_chunks
        self.cache = cache
        self._agents: dict[str, ScriptedBackend] = {}
        self.stats = Stats()

    def _agent(self, model: str) -> ScriptedBackend:
        agent = self._agents.get(model)
        if agent is None:
            agent_id, _, seed = model.rpartition("@")
            policy = ScriptedBackendConfig(
                seed=int(seed or 0),
                latency=self._latency,
                jitter=self._jitter,
                answer_text=self._answer_text,
            )
            agent = ScriptedBackend(
                agent_id=agent_id or model, persona="", policy=policy, seed=policy.seed
            )
            self._agents[model] = agent
        return agent

    async def complete(self, body: dict[str, Any]) -> Completion:
        """The scripted reply to one request body (waits the agent's latency)."""
        request = CompletionRequest(
            messages=tuple(_message(m) for m in body["messages"]),
            tools=tuple(
                ToolSchema(
                    name=t["function"]["name"],
                    description=t["function"].get("description", ""),
                    parameters=t["function"].get("parameters", {}),
                )
                for t in body.get("tools") or ()
            ),
        )
        if body.get("tools"):
            choice = str(body.get("tool_choice", "none sent"))
            self.stats.tool_choices[choice] = self.stats.tool_choices.get(choice, 0) + 1
        cached = None
        if self.cache is not None:
            text = prompt_text(body)
            cached = self.cache.read(text), tokens(text)
        completion = await self._agent(body["model"]).complete(request)
        if self._answer_tokens is not None:
            completion = attrs.evolve(
                completion, message=_padded(completion.message, self._answer_tokens)
            )
        spent = completion.usage or Usage()  # the script always counts; a server may not
        if cached is not None:
            read, prompt = cached
            spent = attrs.evolve(spent, input_tokens=prompt, cache_read_tokens=read)
            completion = attrs.evolve(completion, usage=spent)
        self.stats.prompt_tokens += spent.input_tokens
        self.stats.cached_tokens += spent.cache_read_tokens
        return completion

    async def handle(self, stream: trio.SocketStream) -> None:
        """One connection: requests one after another (keep-alive) until the client closes."""
        self.stats.connections += 1
        buffer = bytearray()
        try:
            while True:
                request = await _read_request(stream, buffer)
                if request is None:
                    return
                method, path, body = request
                if method == "GET" and path == "/stats":
                    self.stats.cpu_s = time.process_time()
                    await stream.send_all(_json_response(200, attrs.asdict(self.stats)))
                    continue
                await self._chat(stream, body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ValueError):
            return
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _chat(self, stream: trio.SocketStream, raw: bytes) -> None:
        stats = self.stats
        if stats.first_request_at is None:
            stats.first_request_at = time.time()
        stats.requests += 1
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        try:
            body = orjson.loads(raw)
            completion = await self.complete(body)
        except Exception as exc:  # a reply the client can read beats a dropped connection
            stats.errors += 1
            error = {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}}
            await stream.send_all(_json_response(500, error))
            return
        finally:
            stats.in_flight -= 1
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        piece = TOKEN_CHARS if self._token_chunks else None
        events = b"".join(_sse(body["model"], completion, usage=usage, piece=piece))
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        await stream.send_all(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(events), events))
        stats.completions += 1


def _padded(message: ChatMessage, answer_tokens: int) -> ChatMessage:
    """``message`` with the content of each of its ``new_answer`` calls padded to about
    ``answer_tokens`` tokens; the padding depends on the length alone, so the same answer
    stays the same."""
    calls = []
    for call in message.tool_calls:
        if call.name == "new_answer":
            arguments = orjson.loads(call.arguments)
            content = str(arguments.get("content", ""))
            target = answer_tokens * TOKEN_CHARS
            detail = 1
            while len(content) < target:
                content += f"\nDetail {detail}: a further point that makes this answer complete."
                detail += 1
            arguments["content"] = content
            call = attrs.evolve(call, arguments=orjson.dumps(arguments).decode())
        calls.append(call)
    return attrs.evolve(message, tool_calls=tuple(calls))


def _message(data: dict[str, Any]) -> ChatMessage:
    calls = tuple(
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
        for c in data.get("tool_calls") or ()
    )
    return ChatMessage(
        role=data["role"],
        content=data.get("content") or "",
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
    )


def _chunk(model: str, delta: dict[str, Any] | None, **extra: Any) -> bytes:
    data: dict[str, Any] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, **extra}],
    }
    if delta is None:
        data["usage"] = extra["usage"]
    return b"data: " + orjson.dumps(data) + b"\n\n"


def _pieces(text: str, piece: int | None) -> list[str]:
    if piece is None or not text:
        return [text]
    return [text[i : i + piece] for i in range(0, len(text), piece)]


def _sse(
    model: str, completion: Completion, *, usage: bool, piece: int | None = None
) -> Iterator[bytes]:
    """The reply's chunks: its text and each call's arguments whole, or (``piece``) in
    pieces of that many characters, one chunk each, as a model streams token by token."""
    message = completion.message
    text = _pieces(message.content, piece)
    yield _chunk(model, {"role": "assistant", "content": text[0]})
    for more in text[1:]:
        yield _chunk(model, {"content": more})
    for index, call in enumerate(message.tool_calls):
        arguments = _pieces(call.arguments, piece)
        function = {"name": call.name, "arguments": arguments[0]}
        call_delta = {"index": index, "id": call.id, "type": "function", "function": function}
        yield _chunk(model, {"tool_calls": [call_delta]})
        for more in arguments[1:]:
            yield _chunk(model, {"tool_calls": [{"index": index, "function": {"arguments": more}}]})
    finish = "tool_calls" if message.tool_calls else "stop"
    yield _chunk(model, {}, finish_reason=finish)
    spent = completion.usage
    if usage and spent is not None:
        counted = {
            "prompt_tokens": spent.input_tokens,
            "completion_tokens": spent.output_tokens,
            "total_tokens": spent.input_tokens + spent.output_tokens,
            "prompt_tokens_details": {"cached_tokens": spent.cache_read_tokens},
        }
        yield _chunk(model, None, usage=counted)
    yield b"data: [DONE]\n\n"


async def _read_request(
    stream: trio.SocketStream, buffer: bytearray
) -> tuple[str, str, bytes] | None:
    """The next request on the connection (method, path, body), or ``None`` at its end."""
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        if len(buffer) > _MAX_HEAD:
            raise ValueError("request head too large")
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    head = bytes(buffer[:end]).decode("latin-1")
    del buffer[: end + 4]
    request_line, *lines = head.split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    length = 0
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    while len(buffer) < length:
        data = await stream.receive_some(max(65536, length - len(buffer)))
        if not data:
            return None
        buffer += data
    body = bytes(buffer[:length])
    del buffer[:length]
    return method, path, body


def _json_response(status: int, data: Any) -> bytes:
    body = orjson.dumps(data)
    reason = "OK" if status == 200 else "Error"
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def serve(
    server: ScriptedServer,
    *,
    port: int = 0,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve on 127.0.0.1 until cancelled; ``nursery.start`` returns the port."""
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=BACKLOG)
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, server.handle, listeners)
        task_status.started(listeners[0].socket.getsockname()[1])


async def _main(
    latency: float, jitter: float, answer_tokens: int | None, token_chunks: bool
) -> None:
    server = ScriptedServer(
        latency=latency, jitter=jitter, answer_tokens=answer_tokens, token_chunks=token_chunks
    )
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, server)
        print(port, flush=True)
        # Serve until the parent closes our stdin (or dies): never outlive the benchmark.
        await trio.to_thread.run_sync(sys.stdin.buffer.read, abandon_on_cancel=True)
        nursery.cancel_scope.cancel()


@attrs.frozen(kw_only=True)
class ServerProcess:
    url: str
    """The OpenAI API root (``http://127.0.0.1:PORT/v1``)."""
    process: subprocess.Popen[bytes]

    def stats(self) -> dict[str, Any]:
        """What the server has served so far (``GET /stats``)."""
        from urllib.request import urlopen

        root = self.url.removesuffix("/v1")
        with urlopen(f"{root}/stats", timeout=10) as response:
            data: dict[str, Any] = json.loads(response.read())
        return data


@contextlib.contextmanager
def open_server_process(
    latency: float = 0.2,
    jitter: float = 0.5,
    *,
    answer_tokens: int | None = None,
    token_chunks: bool = False,
) -> Iterator[ServerProcess]:
    """The scripted server in its own process for the duration of the block; it exits when
    its stdin closes, so it cannot outlive the block (or this process)."""
    argv = [sys.executable, "-m", "conclave.benchmarks.http_server"]
    argv += [f"--latency={latency}", f"--jitter={jitter}"]
    if answer_tokens is not None:
        argv.append(f"--answer-tokens={answer_tokens}")
    if token_chunks:
        argv.append("--token-chunks")
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip():
            raise RuntimeError(f"the benchmark server failed to start (exit {process.wait()})")
        yield ServerProcess(url=f"http://127.0.0.1:{int(line)}/v1", process=process)
    finally:
        assert process.stdin is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.http_server", description=__doc__
    )
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per reply")
    parser.add_argument("--jitter", type=float, default=0.5, help="fraction of latency, ±")
    parser.add_argument("--answer-tokens", type=int, help="pad every answer to this many tokens")
    parser.add_argument(
        "--token-chunks", action="store_true", help="stream replies one token per chunk"
    )
    args = parser.parse_args(argv)
    trio.run(_main, args.latency, args.jitter, args.answer_tokens, args.token_chunks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
