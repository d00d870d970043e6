"""Hostile clients of ``conclave serve``: what one connection sends, or what fails while it is
served, ends that connection at most; the server, its other clients and every run go on.

Each spec keeps a second client watching a run while the hostile one does its worst, and
checks afterwards that the run reached its ``result`` line and the server still answers.
The fuzz specs (hypothesis) throw frames of every kind, size and encoding at the server,
before and after authentication; they run in CI with the rest of the suite.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from trio_websocket import ConnectionClosed

from conclave.ui.serve import server as server_module
from conclave.ui.serve.protocol import MAX_DECODER_DEPTH, CloseCode, decode_client
from conclave.ui.serve.server import MAX_CLIENT_MESSAGE, Server
from tests.serve.helpers import Client, code_of, connect, http_get, scripted_config, serving

DEEP = 100_000
"""Levels of nesting in the hostile frames: far past Python's recursion limit (1,000)."""
SLOW_RUN = scripted_config(latency=0.05)
"""Runs that last a few tenths of a second: in progress while the hostile client acts."""


async def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection and read until the server closes it."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    received = b""
    async with stream:
        await stream.send_all(data)
        with trio.fail_after(15):
            try:
                while chunk := await stream.receive_some(65536):
                    received += chunk
            except trio.BrokenResourceError:  # reset by the server: nothing more to read
                pass
    return received


def deep_array(levels: int = DEEP) -> str:
    return "[" * levels + "]" * levels


@asynccontextmanager
async def watched_run(server: Server) -> AsyncIterator[Client]:
    """A client watching a run it started, for the spec to check the run survived."""
    async with connect(server) as watcher:
        await watcher.start_run()
        yield watcher


async def assert_still_serving(server: Server, watcher: Client) -> None:
    """The watched run reached its result, /health answers, and a new client is welcomed."""
    with trio.fail_after(30):
        result = (await watcher.until("result"))[-1]
        status, body = await http_get(server.port, "/health")
        async with connect(server) as newcomer:
            await newcomer.send(type="cancel", run_id="no-such-run")
            reply = await newcomer.next()
    assert result["termination"] == "completed"
    assert status == 200 and json.loads(body)["status"] == "ok"
    assert reply["code"] == "unknown_run"


async def test_a_deeply_nested_frame_before_auth_is_refused_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, config=SLOW_RUN) as server,
        watched_run(server) as watcher,
        connect(server, headers=[], welcome=False) as hostile,
    ):
        await hostile.ws.send_message(deep_array())
        error = await hostile.next()
        with pytest.raises(ConnectionClosed) as closed:
            await hostile.next()
        await assert_still_serving(server, watcher)

    assert error["code"] == "unauthorized"
    assert "nested" in error["message"] or "depth" in error["message"]
    assert code_of(closed.value) == CloseCode.UNAUTHORIZED


async def test_a_deeply_nested_frame_after_auth_is_a_bad_frame_and_the_connection_stays(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, config=SLOW_RUN) as server,
        watched_run(server) as watcher,
        connect(server) as hostile,
    ):
        await hostile.ws.send_message("{" + '"a": {' * DEEP + "}" * (DEEP + 1))
        error = await hostile.next()
        await hostile.send(type="cancel", run_id="no-such-run")
        still = await hostile.next()
        await assert_still_serving(server, watcher)

    assert error["code"] == "bad_frame"
    assert still["code"] == "unknown_run"


async def test_a_field_nested_just_under_the_decoders_limit_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    token = deep_array(MAX_DECODER_DEPTH - 1)
    async with serving(tmp_path) as server, connect(server) as client:
        await client.ws.send_message(f'{{"type": "auth", "token": {token}, "request_id": "r"}}')
        error = await client.next()

    assert error["code"] == "bad_message"
    assert error["request_id"] == "r"
    assert '"token" holds a JSON array' in error["message"]


async def test_a_failure_inside_one_connection_closes_it_with_1011_and_a_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(frame: str | bytes) -> object:
        if "boom" in str(frame):
            raise RuntimeError("a bug in the server")
        return decode_client(frame)

    monkeypatch.setattr(server_module, "decode_client", failing)
    log: list[str] = []
    async with (
        serving(tmp_path, config=SLOW_RUN, log=log) as server,
        watched_run(server) as watcher,
        connect(server) as unlucky,
    ):
        await unlucky.send(type="cancel", run_id="boom")
        with pytest.raises(ConnectionClosed) as closed:
            await unlucky.next()
        await assert_still_serving(server, watcher)

    assert code_of(closed.value) == 1011  # INTERNAL_ERROR, a standard code
    failures = [line for line in log if "internal error" in line]
    assert len(failures) == 1
    assert "RuntimeError: a bug in the server" in failures[0]
    assert "the server and its runs go on" in failures[0]


async def test_a_failure_before_the_handshake_ends_that_connection_with_a_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def failing(stream: trio.SocketStream) -> None:
        raise RuntimeError("a bug reading the head")

    monkeypatch.setattr(server_module, "read_head", failing)
    log: list[str] = []
    async with serving(tmp_path, log=log) as server:
        answers = [await exchange(server.port, b"GET /health HTTP/1.1\r\n\r\n") for _ in "ab"]
        monkeypatch.undo()
        status, _ = await http_get(server.port, "/health")

    assert answers == [b"", b""]
    assert status == 200
    assert log == ["a connection failed and was closed: RuntimeError: a bug reading the head"] * 2


async def test_a_too_large_frame_while_the_server_closes_ends_that_connection_only(
    tmp_path: Path,
) -> None:
    # trio-websocket (0.12.2) answers a message past its size limit with a close frame even
    # when it is already closing; wsproto refuses the second close and the library's reader
    # task raises. The connection is over either way: it must end alone, with a log line.
    log: list[str] = []
    async with (
        serving(tmp_path, config=SLOW_RUN, log=log) as server,
        watched_run(server) as watcher,
        connect(server, headers=[], welcome=False) as hostile,
    ):
        await hostile.send(type="cancel", run_id="not-auth")  # refused: the server closes
        with contextlib.suppress(ConnectionClosed):
            await hostile.ws.send_message("x" * (MAX_CLIENT_MESSAGE + 1))
        await assert_still_serving(server, watcher)

    assert unexpected(log) == []


CLOSE_RACE = "a connection failed and was closed: LocalProtocolError"
"""The log line of the trio-websocket race above: the one failure a client can cause."""


def unexpected(log: list[str]) -> list[str]:
    """The server's log lines other than runs starting and ending and the close race."""
    return [line for line in log if not line.startswith(("run ", CLOSE_RACE))]
