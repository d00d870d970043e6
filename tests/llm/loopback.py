"""A real HTTP/1.1 server on 127.0.0.1 for the backend tests: the SDKs talk to it over real
sockets, so timeouts, dropped streams and connection reuse behave as they do in production.

Each test scripts the replies: a list consumed in order (:meth:`LoopbackServer.script`) or a
function of the request (:attr:`LoopbackServer.handler`). A reply is plain JSON or a stream
of server-sent events written as HTTP chunks, with pauses, a stall (nothing more until the
client gives up) or a drop (the connection closed mid-body) where the test wants them.

Never use ``autojump_clock`` with it: virtual time fires the clients' read timeouts at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

__all__ = [
    "Drop",
    "Hangup",
    "JsonReply",
    "LoopbackServer",
    "Part",
    "Pause",
    "Recorded",
    "Reply",
    "SseReply",
    "Stall",
    "open_loopback_server",
    "sse_data",
    "sse_event",
]

BACKLOG = 128
"""Pending connections the kernel queues: the stdlib's 5 turns 20 concurrent streams from
0.2 s into 1.7 s (refused SYNs are retried after a second)."""


@attrs.frozen(kw_only=True)
class Recorded:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@attrs.frozen
class Pause:
    seconds: float


@attrs.frozen
class Stall:
    """Send nothing more; wait until the client closes the connection."""


@attrs.frozen
class Drop:
    """Close the connection at once, mid-body."""


Part = bytes | Pause | Stall | Drop


@attrs.frozen
class Hangup:
    """Close the connection without replying."""


@attrs.frozen(kw_only=True)
class JsonReply:
    body: Any
    status: int = 200
    headers: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class SseReply:
    parts: tuple[Part, ...]
    """Each ``bytes`` part is written as one HTTP chunk (so a test can split an event, or a
    line, across chunk boundaries)."""
    status: int = 200
    headers: dict[str, str] = attrs.field(factory=dict)


Reply = JsonReply | SseReply | Hangup
Handler = Callable[[Recorded], Reply | Awaitable[Reply]]


def sse_data(data: Any) -> bytes:
    """An OpenAI-style event: ``data:`` only (``[DONE]`` passes as text)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


def sse_event(name: str, data: Any) -> bytes:
    """An Anthropic-style event: a name and JSON data."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


_REASONS = {200: "OK", 307: "Temporary Redirect", 401: "Unauthorized", 404: "Not Found"}


class LoopbackServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.requests: list[Recorded] = []
        self.open_connections = 0
        self.connections_accepted = 0
        self.in_flight = 0
        """Requests being answered now."""
        self.peak_in_flight = 0
        self.handler: Handler | None = None
        self._script: list[Reply] = []
        self._changed = trio.lowlevel.ParkingLot()

    async def wait_for(self, condition: Callable[[LoopbackServer], bool]) -> None:
        """Until ``condition(server)`` holds; re-checked as requests arrive and connections
        close. Bound it with ``trio.fail_after``."""
        while not condition(self):
            await self._changed.park()

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order (after any still queued)."""
        self._script.extend(replies)

    async def _reply_to(self, request: Recorded) -> Reply:
        if self._script:
            return self._script.pop(0)
        if self.handler is not None:
            reply = self.handler(request)
            return await reply if isinstance(reply, Awaitable) else reply
        return JsonReply(status=500, body={"error": {"message": "the test scripted no reply"}})

    async def serve(self, stream: trio.SocketStream) -> None:
        self.open_connections += 1
        self.connections_accepted += 1
        reader = _Reader(stream)
        try:
            while True:
                request = await reader.request()
                if request is None:
                    return
                self.requests.append(request)
                self._changed.unpark_all()
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    reply = await self._reply_to(request)
                    if not await _write(stream, reply):
                        return
                finally:
                    self.in_flight -= 1
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            self.open_connections -= 1
            self._changed.unpark_all()
            with trio.CancelScope(shield=True):
                await stream.aclose()


class _Reader:
    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def _fill(self) -> bool:
        data = await self._stream.receive_some(65536)
        self._buffer += data
        return bool(data)

    async def request(self) -> Recorded | None:
        while b"\r\n\r\n" not in self._buffer:
            if not await self._fill():
                return None
        head, _, rest = bytes(self._buffer).partition(b"\r\n\r\n")
        self._buffer = bytearray(rest)
        request_line, *lines = head.decode("latin-1").split("\r\n")
        method, path, _version = request_line.split(" ", 2)
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self._buffer) < length:
            if not await self._fill():
                return None
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        return Recorded(method=method, path=path, headers=headers, body=body)


def _head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _write(stream: trio.SocketStream, reply: Reply) -> bool:
    """Write one reply; whether the connection may serve another request."""
    if isinstance(reply, Hangup):
        return False
    if isinstance(reply, JsonReply):
        body = json.dumps(reply.body).encode()
        headers = {"content-type": "application/json", "content-length": str(len(body))}
        await stream.send_all(_head(reply.status, {**headers, **reply.headers}.items()) + body)
        return True
    headers = {"content-type": "text/event-stream", "transfer-encoding": "chunked"}
    await stream.send_all(_head(reply.status, {**headers, **reply.headers}.items()))
    for part in reply.parts:
        if isinstance(part, Pause):
            await trio.sleep(part.seconds)
        elif isinstance(part, Stall):
            while await stream.receive_some(65536):
                pass
            return False
        elif isinstance(part, Drop):
            return False
        elif part:
            await stream.send_all(b"%x\r\n%s\r\n" % (len(part), part))
    await stream.send_all(b"0\r\n\r\n")
    return True


@asynccontextmanager
async def open_loopback_server() -> AsyncIterator[LoopbackServer]:
    """A server on a free port of 127.0.0.1 for the duration of the block."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1", backlog=BACKLOG)
    port = listeners[0].socket.getsockname()[1]
    server = LoopbackServer(port)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, server.serve, listeners)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
