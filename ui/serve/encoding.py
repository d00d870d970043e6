"""How a connection gets a run's frames: UTF-8 text (the protocol's default), or, for a client
that proposed the subprotocol ``conclave.v1.zlib``, the same text compressed with zlib in
binary frames.

A 1,000-agent run's stream-json is about 3.2 MB; sent as text to 100 watchers, that is
320 MB through the kernel's loopback TCP per run, and most of what watching cost the server
(issue 24: +0.06-0.1 s of system CPU per run, and its own code slowed beside the copying).
Its lines repeat their keys, ids and texts, so zlib at level 1 shrinks it about 13 times
(242 KB) for 5 ms of CPU per run: once per frame, since every watcher that asked for it
gets the same compressed bytes. Level 6 saves a further fifth of the bytes for three times
the CPU; level 1 is the better trade here.

The compression is the application's, not a websocket extension (permessage-deflate): the
frames are plain binary frames, so they can still be built once and written beneath
trio-websocket (:mod:`ui.serve.raw_frames`), and a client needs only ``zlib`` (a browser's
``DecompressionStream("deflate")``), not an extension its library may not offer
(trio-websocket offers none).
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Sequence

from conclave.ui.serve.auth import SUBPROTOCOL
from conclave.ui.serve.raw_frames import binary_frame, text_frame

__all__ = ["ZLIB_LEVEL", "ZLIB_SUBPROTOCOL", "FrameEncoding", "encoded_frame", "negotiate"]

ZLIB_SUBPROTOCOL = "conclave.v1.zlib"
"""The subprotocol a client proposes to get a run's lines and snapshots compressed."""
ZLIB_LEVEL = 1
"""A 1,000-agent run's 3.2 MB of stream-json, in its frames: level 1 makes 242 KB in 5 ms,
level 6 195 KB in 14 ms, level 9 180 KB in 66 ms (measured on the development machine)."""


class FrameEncoding(enum.Enum):
    """How a run's frames are written to one connection."""

    TEXT = "text"
    """Text frames of UTF-8 JSON lines: the protocol's default."""
    ZLIB = "zlib"
    """Binary frames, each the zlib data (RFC 1950) of the text frame it stands for."""


def negotiate(proposed: Sequence[str]) -> tuple[str | None, FrameEncoding]:
    """The subprotocol to select among those a client ``proposed``, and the encoding it
    means: ``conclave.v1.zlib`` first, then ``conclave.v1``; none of them, text."""
    if ZLIB_SUBPROTOCOL in proposed:
        return ZLIB_SUBPROTOCOL, FrameEncoding.ZLIB
    return (SUBPROTOCOL if SUBPROTOCOL in proposed else None), FrameEncoding.TEXT


def encoded_frame(payload: bytes, encoding: FrameEncoding) -> bytes:
    """``payload`` (UTF-8 text: JSON lines) as the websocket frame ``encoding`` sends."""
    if encoding is FrameEncoding.ZLIB:
        return binary_frame(zlib.compress(payload, ZLIB_LEVEL))
    return text_frame(payload)
