"""The fast path beneath trio-websocket (``ui/serve/raw_frames.py``) writes frames built by
hand on the socket: valid only while a connection negotiates no extension. These specs offer
one, as browsers do, and fail the moment the server accepts any."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import TypeVar

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, Event, Request, TextMessage
from wsproto.extensions import PerMessageDeflate

from conclave.ui.serve.encoding import ZLIB_SUBPROTOCOL
from conclave.ui.serve.raw_frames import binary_frame, text_frame
from tests.serve.helpers import TASK, bearer, scripted_config, serving

E = TypeVar("E", bound=Event)


async def _next(kind: type[E], protocol: WSConnection, stream: trio.SocketStream) -> E:
    """The next ``kind`` event from the server; other events before it are passed over."""
    while True:
        for event in protocol.events():
            if isinstance(event, kind):
                return event
        protocol.receive_data(await stream.receive_some() or None)


def _offering_deflate(subprotocols: list[str] | None = None) -> tuple[WSConnection, bytes]:
    protocol = WSConnection(ConnectionType.CLIENT)
    request = Request(
        host="127.0.0.1",
        target="/",
        extra_headers=bearer(),
        extensions=[PerMessageDeflate()],
        subprotocols=subprotocols or [],
    )
    return protocol, protocol.send(request)


async def test_a_client_offering_permessage_deflate_gets_a_connection_without_extensions(
    tmp_path: Path,
) -> None:
    protocol, handshake = _offering_deflate()
    async with (
        serving(tmp_path) as server,
        await trio.open_tcp_stream("127.0.0.1", server.port) as stream,
    ):
        await stream.send_all(handshake)
        accepted = await _next(AcceptConnection, protocol, stream)
        welcome = await _next(TextMessage, protocol, stream)

    assert accepted.extensions == []
    assert json.loads(welcome.data)["type"] == "welcome"


async def test_a_run_watched_through_the_fast_path_reads_as_plain_text_frames(
    tmp_path: Path,
) -> None:
    # A standard client that offered deflate reads every frame of a run, written by hand on
    # the socket or by trio-websocket, as text, up to the result.
    protocol, handshake = _offering_deflate()
    async with (
        serving(tmp_path, config=scripted_config(3, latency=0.01)) as server,
        await trio.open_tcp_stream("127.0.0.1", server.port) as stream,
    ):
        await stream.send_all(handshake)
        await _next(TextMessage, protocol, stream)  # welcome
        start = {"type": "start_run", "task": TASK}
        await stream.send_all(protocol.send(TextMessage(data=json.dumps(start))))
        kinds: list[str] = []
        with trio.fail_after(30):
            while "result" not in kinds:
                message = await _next(TextMessage, protocol, stream)
                kinds += [json.loads(line)["type"] for line in message.data.split("\n")]

    assert kinds[0] == "run_accepted"
    assert "run_started" in kinds


def test_a_hand_built_frame_is_final_text_unmasked_with_no_extension_bits() -> None:
    for size in (0, 125, 126, 65535, 65536):
        frame = text_frame(b"x" * size)

        assert frame[0] == 0x81  # FIN, RSV1-3 clear, opcode text
        assert frame[1] & 0x80 == 0  # a server's frames are not masked


async def test_a_compressed_run_through_the_fast_path_reads_as_plain_binary_frames(
    tmp_path: Path,
) -> None:
    # Compression is the application's (zlib in binary frames), never an extension: a client
    # that offered deflate and asked for zlib reads the run's frames with no RSV bit set.
    protocol, handshake = _offering_deflate([ZLIB_SUBPROTOCOL])
    async with (
        serving(tmp_path, config=scripted_config(3, latency=0.01)) as server,
        await trio.open_tcp_stream("127.0.0.1", server.port) as stream,
    ):
        await stream.send_all(handshake)
        accepted = await _next(AcceptConnection, protocol, stream)
        await _next(TextMessage, protocol, stream)  # welcome
        start = {"type": "start_run", "task": TASK}
        await stream.send_all(protocol.send(TextMessage(data=json.dumps(start))))
        await _next(TextMessage, protocol, stream)  # run_accepted
        kinds: list[str] = []
        with trio.fail_after(30):
            while "result" not in kinds:
                message = await _next(BytesMessage, protocol, stream)
                text = zlib.decompress(message.data).decode("utf-8")
                kinds += [json.loads(line)["type"] for line in text.split("\n")]

    assert accepted.extensions == []
    assert accepted.subprotocol == ZLIB_SUBPROTOCOL
    assert kinds[0] == "run_started"


def test_a_hand_built_binary_frame_is_final_binary_unmasked_with_no_extension_bits() -> None:
    for size in (0, 125, 126, 65535, 65536):
        frame = binary_frame(b"x" * size)

        assert frame[0] == 0x82  # FIN, RSV1-3 clear, opcode binary
        assert frame[1] & 0x80 == 0
