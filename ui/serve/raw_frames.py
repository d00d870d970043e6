"""The fast path beneath trio-websocket: a run's websocket frames built by hand once and
written to each watcher's socket as they are.

A run watched by a hundred clients would otherwise send every line through
``WebSocketConnection.send_message`` once per client: a frame header built, the text encoded
and a task woken per client and per frame (issue 24 measured the run at +85 % with 100
clients and 1,000 agents). Here a frame is built once (:func:`text_frame`), and
:func:`write_now` writes it with one ``os.write`` on the socket's file descriptor for every
caught-up watcher, from the task that sealed it; :func:`send_frames` sends what a full
socket held back. Both hold the connection's send lock (:attr:`ReplayStream.sending`), which
trio-websocket's own sends hold too, so a frame never lands inside one of its frames.

This is only valid while the connection negotiated no extension: an extension (such as
permessage-deflate) may change what a frame's bytes mean (its RSV bits, its payload). The
server accepts none (trio-websocket offers none); ``tests/serve/test_raw_frames.py`` fails
if a connection ever negotiates one. Compression, for the clients that ask for it, is the
application's instead (:mod:`ui.serve.encoding`): zlib data in plain binary frames
(:func:`binary_frame`), which need no extension.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

import trio

from conclave.ui.serve.health import ReplayStream

__all__ = ["binary_frame", "send_frames", "text_frame", "write_now"]


_TEXT = 0x81
"""FIN, no RSV bit, opcode 1 (text)."""
_BINARY = 0x82
"""FIN, no RSV bit, opcode 2 (binary)."""


def text_frame(payload: bytes) -> bytes:
    """``payload`` (UTF-8 text) as one final, unmasked websocket text frame, as a server
    sends it (RFC 6455 section 5.2): built once, sent to every watcher as it is."""
    return _frame(_TEXT, payload)


def binary_frame(payload: bytes) -> bytes:
    """``payload`` as one final, unmasked websocket binary frame (as :func:`text_frame`)."""
    return _frame(_BINARY, payload)


def _frame(first_byte: int, payload: bytes) -> bytes:
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", first_byte, size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", first_byte, 126, size)
    else:
        head = struct.pack("!BBQ", first_byte, 127, size)
    return head + payload


async def send_frames(
    stream: ReplayStream, frames: bytes, *, still_open: Callable[[], bool]
) -> bool:
    """Send ``frames`` (whole websocket frames) unless ``still_open()`` says, once no other
    send is in progress, that the connection is closing (then ``False``: nothing may follow
    a close frame). Raises what ``send_all`` raises. What the socket takes at once goes in
    one write, with no trip through trio's scheduler. Cancelled, the frames may be sent in
    part: the connection is then unusable, as after any cancelled ``send_all``."""
    lock = stream.sending
    if lock.locked():
        await lock.acquire()
    else:
        lock.acquire_nowait()
    try:
        if not still_open():
            return False
        sent = _write(stream, frames)
        if sent < len(frames):
            await stream.stream.send_all(memoryview(frames)[sent:])
        return True
    finally:
        lock.release()


def write_now(stream: ReplayStream, frames: bytes) -> int | None:
    """Write what the socket takes of ``frames`` (whole websocket frames) now, without
    waiting: the bytes written (0 if the socket is full), or ``None`` if nothing may be
    written now (another send is in progress, or the socket failed: the next
    :func:`send_frames` raises). Never raises, never waits: a run's feed calls it for every
    caught-up watcher as it seals a frame (see :class:`ui.serve.feed.Watcher`)."""
    if stream.sending.locked():
        return None
    try:
        return _write(stream, frames)
    except trio.BrokenResourceError:
        return None


def _write(stream: ReplayStream, data: bytes) -> int:
    """As much of ``data`` as the socket takes without blocking (none if the connection is
    not a socket)."""
    if not isinstance(stream.stream, trio.SocketStream):
        return 0
    try:
        return os.write(stream.stream.socket.fileno(), data)
    except BlockingIOError:
        return 0
    except OSError as exc:
        raise trio.BrokenResourceError(f"the client's socket failed: {exc}") from exc
