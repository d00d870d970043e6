"""A backend's own retries, against a real server on loopback: a request that failed
quickly before its reply began is sent again after the wait it reports; a server's
``Retry-After`` is waited for within the call's limits, or the call fails at once saying how
long the server asked; what a stream sent that is not the protocol is quoted, not called a
lost connection."""

from __future__ import annotations

import pytest
import trio

from conclave.actors.llm.errors import FatalLLMError, TransientLLMError
from conclave.actors.llm.pool import open_backends
from conclave.config.schema.endpoint import Timeouts
from tests.llm.helpers import Recorder, anthropic_agent, ask, openai_agent, timed_failure
from tests.llm.loopback import LoopbackServer, Recorded, Reply, SseReply
from tests.llm.wire import anthropic_events, openai_chunk, openai_error, openai_reply


async def test_a_retry_after_longer_than_the_call_may_take_fails_at_once_saying_how_long(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: openai_error(429, "slow down", **{"retry-after": "300"})
    error, seconds = await timed_failure(
        openai_agent(server, max_retries=2, timeouts=Timeouts(connect=2.0, total=5.0))
    )
    assert isinstance(error, FatalLLMError)
    assert "asked to wait 300s" in str(error)
    assert "slow down" in str(error)
    assert len(server.requests) == 1
    assert seconds < 2.0


async def test_a_retry_after_within_the_calls_limits_is_waited_for(
    server: LoopbackServer,
) -> None:
    server.script(
        openai_error(429, "slow down", **{"retry-after": "1"}),
        SseReply(parts=tuple(openai_reply("ok"))),
    )
    async with open_backends() as pool:
        backend = await pool.backend(
            openai_agent(server, max_retries=1, timeouts=Timeouts(connect=2.0, total=5.0))
        )
        started = trio.current_time()
        completion = await backend.complete(ask())
    assert completion.message.content == "ok"
    assert trio.current_time() - started >= 1.0


async def test_each_retry_waits_the_delay_it_reports_and_says_why(server: LoopbackServer) -> None:
    arrivals: list[float] = []

    def failing_twice(_request: Recorded) -> Reply:
        arrivals.append(trio.current_time())
        if len(arrivals) <= 2:
            return openai_error(503, "busy")
        return SseReply(parts=tuple(openai_reply("ok")))

    server.handler = failing_twice
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, max_retries=2))
        await backend.complete(ask(), sink=sink)
    retries = sink.of("retry")
    assert [(attempt, status) for _, attempt, status, _, _ in retries] == [(1, 503), (2, 503)]
    assert all("busy" in error for *_, error in retries)
    for (_, _, _, delay, _), before, after in zip(retries, arrivals, arrivals[1:], strict=False):
        assert 0.0 <= delay <= 1.0
        assert after - before >= delay


async def test_an_event_that_is_not_json_is_quoted_where_it_breaks(
    server: LoopbackServer,
) -> None:
    broken = b'data: {"id": "chatcmpl-1", "choices": [tru\n\n'
    server.script(SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}), broken)))
    error, _ = await timed_failure(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    message = str(error)
    assert "the server sent an event whose data is not JSON" in message
    assert 'at character 33 of 36), near: {"id": "chatcmpl-1", "choices": [tru' in message
    assert "connection was lost" not in message


async def test_the_place_a_long_event_breaks_is_quoted_not_its_head(
    server: LoopbackServer,
) -> None:
    broken = b'data: {"id": "' + b"x" * 2000 + b'", oops}\n\n'
    server.script(SseReply(parts=(broken,)))
    error, _ = await timed_failure(openai_agent(server))
    message = str(error)
    assert "oops" in message
    assert len(message) < 400


async def test_an_event_of_another_shape_says_what_it_held(server: LoopbackServer) -> None:
    server.script(
        SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}), b"data: [1, 2]\n\n"))
    )
    error, _ = await timed_failure(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    message = str(error)
    assert "the server sent an event that is not the Chat Completions protocol's" in message
    assert "[1, 2]" in message


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"type": "content_block_delta", [tru', "data is not JSON"),
        (b"[1, 2]", "that is not the Messages API's"),
    ],
)
async def test_an_anthropic_event_that_breaks_the_protocol_says_what_was_wrong(
    server: LoopbackServer, data: bytes, said: str
) -> None:
    begun = anthropic_events([{"type": "text", "text": ["Hi"]}])[:2]
    server.script(SseReply(parts=(*begun, b"event: content_block_delta\ndata: " + data + b"\n\n")))
    error, _ = await timed_failure(anthropic_agent(server))
    assert isinstance(error, TransientLLMError)
    assert said in str(error)
    assert "connection was lost" not in str(error)
