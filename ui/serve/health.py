"""Plain HTTP on the websocket's port: ``GET /health``, and a clear answer to anything else.

trio-websocket hands a handler only websocket handshakes: wsproto answers a plain request
(no ``Upgrade: websocket``) with a bare 400 before any handler sees it. So the server reads
each connection's request head first (:func:`read_head`): a plain request is answered here,
and an upgrade is handed to trio-websocket on a stream that replays the bytes already read
(:class:`ReplayStream`).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import trio

__all__ = ["MAX_HEAD_BYTES", "ReplayStream", "RequestHead", "read_head", "respond", "respond_json"]

MAX_HEAD_BYTES = 16 * 1024
"""A request head longer than this is refused (431)."""

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
}


@attrs.frozen(kw_only=True)
class RequestHead:
    method: str
    path: str
    """The target without its query string."""
    upgrade: bool
    """``Upgrade: websocket``: a websocket handshake."""
    data: bytes
    """Every byte read from the connection so far (the head, and maybe more)."""


async def read_head(stream: trio.abc.Stream) -> RequestHead | None:
    """The request head of ``stream``; ``None`` if the peer closed first. Raises
    :class:`ValueError` for a head that is malformed or longer than :data:`MAX_HEAD_BYTES`
    (the caller answers 400 or 431). Cancel it to bound the wait."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise ValueError("head too long")
        chunk = await stream.receive_some(4096)
        if not chunk:
            return None
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    request_line, *header_lines = head.split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise ValueError("malformed request line")
    upgrade = False
    for line in header_lines:
        name, sep, value = line.partition(":")
        if not sep:
            raise ValueError("malformed header line")
        if name.strip().lower() == "upgrade" and "websocket" in value.lower():
            upgrade = True
    return RequestHead(method=parts[0], path=parts[1].split("?", 1)[0], upgrade=upgrade, data=data)


async def respond(
    stream: trio.abc.Stream, status: int, body: bytes, *, content_type: str, head_only: bool
) -> None:
    """Send one response and end (``Connection: close``)."""
    reason = _REASONS.get(status, "Error")
    headers = (
        f"HTTP/1.1 {status} {reason}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n\r\n"
    )
    await stream.send_all(headers.encode("latin-1") + (b"" if head_only else body))


async def respond_json(
    stream: trio.abc.Stream, status: int, data: dict[str, Any], *, head_only: bool = False
) -> None:
    body = (json.dumps(data) + "\n").encode("utf-8")
    await respond(stream, status, body, content_type="application/json", head_only=head_only)


class ReplayStream(trio.abc.Stream):
    """``stream``, with ``prefix`` received first: the head :func:`read_head` consumed.

    Every send holds :attr:`sending`, so whole websocket frames built elsewhere (a run's
    shared frames: :mod:`ui.serve.raw_frames`) can be sent between trio-websocket's own,
    never inside one."""

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self.stream = stream
        self.sending = trio.StrictFIFOLock()
        self._prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            size = len(self._prefix) if max_bytes is None else max_bytes
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            await trio.lowlevel.checkpoint()
            return data
        return bytes(await self.stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        async with self.sending:
            await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        if isinstance(self.stream, trio.abc.HalfCloseableStream):
            await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()
