"""The Chat Completions client's lanes, against a real server: calls in flight at once each
take an HTTP client of their own (a pool of one connection, so no request scans every
agent's connection), and calls one after another reuse the lane last given back."""

from __future__ import annotations

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


async def _call(chat: ChatClient) -> None:
    stream = await chat.open(BODY, headers={}, timeout=TIMEOUT)
    async with stream:
        async for _ in stream:
            pass


async def test_calls_in_flight_at_once_take_a_lane_each_and_later_calls_reuse_them(
    server: LoopbackServer,
) -> None:
    all_in = trio.Event()

    async def answer_once_all_three_are_in(_request: Recorded) -> SseReply:
        if len(server.requests) == 3:
            all_in.set()
        await all_in.wait()
        return SseReply(parts=tuple(openai_reply("ok")))

    server.handler = answer_once_all_three_are_in
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


async def test_a_server_that_keeps_the_body_open_after_done_does_not_hold_the_reply(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: SseReply(parts=(*openai_reply("ok"), Stall()))
    async with ChatClient.openai(base_url=server.url, key="k", http=Lanes()) as chat:
        with trio.fail_after(DRAIN_S + 2.0):
            stream = await chat.open(BODY, headers={}, timeout=TIMEOUT)
            async with stream:
                chunks = [chunk async for chunk in stream]

    assert chunks and chunks[-1]["choices"][0]["finish_reason"] == "stop"
