"""The Chat Completions client against a real server: on connections of its own (an endpoint
given its TLS context) or, as when a proxy is configured, on ``httpx2`` lanes (calls in flight
at once each take an HTTP client of their own, a pool of one connection, so no request scans
every agent's connection; calls one after another reuse the lane last given back); either
way the reply's events are read alike."""

from __future__ import annotations

import json
import ssl

import httpx2
import pytest
import trio

from conclave.actors.llm.chat_wire import DRAIN_S, ChatClient, ChatStatusError
from tests.llm.loopback import LoopbackServer, Recorded, SseReply, Stall
from tests.llm.wire import openai_error, openai_reply

BODY = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
TIMEOUT = httpx2.Timeout(5.0)


class Lanes:
    """The HTTP clients a ChatClient made."""

    def __init__(self) -> None:
        self.made: list[httpx2.AsyncClient] = []

    def __call__(self) -> httpx2.AsyncClient:
        client = httpx2.AsyncClient()
        self.made.append(client)
        return client


@pytest.fixture(params=["own connections", "httpx2 lanes"])
def direct(request: pytest.FixtureRequest) -> bool:
    """Whether the client sends on connections of its own (else through ``httpx2``)."""
    return bool(request.param == "own connections")


def _client(server: LoopbackServer, direct: bool) -> ChatClient:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT) if direct else None
    return ChatClient.openai(base_url=server.url, key="k", http=Lanes(), tls=tls)


async def _call(chat: ChatClient) -> None:
    stream = await chat.open(BODY, headers={}, timeout=TIMEOUT)
    async with stream:
        async for _ in stream:
            pass


def _answer_once_three_are_in(server: LoopbackServer) -> None:
    """Hold every request until three are in flight at once, then answer them all."""
    all_in = trio.Event()

    async def answer(_request: Recorded) -> SseReply:
        if len(server.requests) == 3:
            all_in.set()
        await all_in.wait()
        return SseReply(parts=tuple(openai_reply("ok")))

    server.handler = answer


async def test_calls_in_flight_at_once_take_a_lane_each_and_later_calls_reuse_them(
    server: LoopbackServer,
) -> None:
    _answer_once_three_are_in(server)
    lanes = Lanes()
    async with ChatClient.openai(base_url=server.url, key="k", http=lanes) as chat:
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(_call, chat)
        for _ in range(3):
            await _call(chat)
        assert chat.lanes == len(lanes.made) == 3
    assert len(server.requests) == 6
    assert server.connections_accepted == 3
    assert all(lane.is_closed for lane in lanes.made)


async def test_calls_one_after_another_share_one_lane_and_its_connection(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: SseReply(parts=tuple(openai_reply("ok")))
    lanes = Lanes()
    async with ChatClient.openai(base_url=server.url, key="k", http=lanes) as chat:
        for _ in range(3):
            await _call(chat)
    assert len(lanes.made) == 1
    assert server.connections_accepted == 1


async def test_a_refused_request_gives_its_lane_back(server: LoopbackServer) -> None:
    server.handler = lambda _request: openai_error(400, "no such model")
    lanes = Lanes()
    async with ChatClient.openai(base_url=server.url, key="k", http=lanes) as chat:
        for _ in range(2):
            with pytest.raises(ChatStatusError):
                await _call(chat)
    assert len(lanes.made) == 1


async def test_calls_in_flight_at_once_open_a_connection_each_and_later_calls_reuse_them(
    server: LoopbackServer,
) -> None:
    _answer_once_three_are_in(server)
    async with _client(server, direct=True) as chat:
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(_call, chat)
        for _ in range(3):
            await _call(chat)
        assert (chat.connections, chat.lanes) == (3, 0)
    assert len(server.requests) == 6
    assert server.connections_accepted == 3
    with trio.fail_after(5):
        await server.wait_for(lambda s: s.open_connections == 0)


async def test_a_refused_request_leaves_its_connection_to_the_next(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: openai_error(400, "no such model")
    async with _client(server, direct=True) as chat:
        for _ in range(2):
            with pytest.raises(ChatStatusError):
                await _call(chat)
    assert server.connections_accepted == 1


async def test_a_server_that_keeps_the_body_open_after_done_does_not_hold_the_reply(
    server: LoopbackServer, direct: bool
) -> None:
    server.handler = lambda _request: SseReply(parts=(*openai_reply("ok"), Stall()))
    async with _client(server, direct) as chat:
        with trio.fail_after(DRAIN_S + 2.0):
            stream = await chat.open(BODY, headers={}, timeout=TIMEOUT)
            async with stream:
                chunks = [chunk async for chunk in stream]

    assert chunks and chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def _chunks(server: LoopbackServer, direct: bool, *parts: bytes) -> list[object]:
    server.handler = lambda _request: SseReply(parts=parts)
    async with _client(server, direct) as chat:
        stream = await chat.open(BODY, headers={}, timeout=TIMEOUT)
        async with stream:
            return [chunk async for chunk in stream]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
async def test_lines_may_end_in_any_way_server_sent_events_allow(
    server: LoopbackServer, direct: bool, end: bytes
) -> None:
    events = b'data: {"n": 1}' + end * 2 + b": a comment" + end + b"data: [DONE]" + end * 2

    assert await _chunks(server, direct, events) == [{"n": 1}]


async def test_a_crlf_cut_between_its_two_bytes_ends_one_line_not_an_event(
    server: LoopbackServer, direct: bool
) -> None:
    # Were the CR taken for a line's end, the LF after it would be an empty line ending the
    # event after its first data line.
    chunks = await _chunks(
        server, direct, b'data: {"n":\r', b"\ndata: 1}\r\n\r\n", b"data: [DONE]\r\n\r\n"
    )

    assert chunks == [{"n": 1}]


async def test_an_events_data_lines_are_joined_into_one_json_document(
    server: LoopbackServer, direct: bool
) -> None:
    chunks = await _chunks(server, direct, b'data: {"a":\ndata: [1,\ndata:2]}\n\ndata: [DONE]\n\n')

    assert chunks == [{"a": [1, 2]}]


async def test_a_last_event_without_its_blank_line_still_counts(
    server: LoopbackServer, direct: bool
) -> None:
    assert await _chunks(server, direct, b'data: {"n": 1}') == [{"n": 1}]


async def test_data_that_is_not_utf8_is_read_with_the_bad_bytes_replaced(
    server: LoopbackServer, direct: bool
) -> None:
    assert await _chunks(server, direct, b'data: {"n": "\xff"}\n\n') == [{"n": "\ufffd"}]


async def test_data_that_is_not_json_raises_the_standard_parsers_error(
    server: LoopbackServer, direct: bool
) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        await _chunks(server, direct, b"data: [tru\n\n")

    assert (raised.value.msg, raised.value.pos) == ("Expecting value", 1)
