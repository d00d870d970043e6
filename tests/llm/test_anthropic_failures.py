"""How the ``anthropic`` backend fails against a Messages API server that misbehaves on cue.
Anthropic reports some failures unlike OpenAI: an overload mid-stream as an ``error`` event
on a status-200 stream, a stalled or dropped stream as a bare ``httpx2`` error."""

from __future__ import annotations

import traceback

import pytest

from conclave.actors.llm.errors import ContextOverflow, FatalLLMError, TransientLLMError
from conclave.actors.llm.pool import open_backends
from conclave.config.schema.endpoint import Timeouts
from tests.llm.helpers import KEY, Recorder, anthropic_agent, ask, fails, timed_failure
from tests.llm.loopback import Drop, LoopbackServer, SseReply, Stall, sse_event
from tests.llm.wire import (
    anthropic_error,
    anthropic_events,
    anthropic_message_start,
    anthropic_reply,
)

OVERLOADED = {"type": "overloaded_error", "message": "Overloaded"}


async def test_an_overload_reported_mid_stream_with_status_200_is_a_transient_error(
    server: LoopbackServer,
) -> None:
    server.script(
        SseReply(
            parts=(
                anthropic_message_start(),
                sse_event("error", {"type": "error", "error": OVERLOADED}),
            )
        )
    )
    error = await fails(anthropic_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "overloaded" in str(error)


async def test_an_overload_before_the_stream_is_retried_and_the_retry_reaches_the_sink(
    server: LoopbackServer,
) -> None:
    server.script(
        anthropic_error(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "200"}),
        anthropic_reply("ok"),
    )
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server, max_retries=1))
        completion = await backend.complete(ask(), sink=sink)
    assert completion.message.content == "ok"
    [(_, attempt, status, delay, error)] = sink.of("retry")
    assert (attempt, status) == (1, 529)
    assert 0.2 <= delay <= 0.5  # the server's wait, or the back-off's draw if longer
    assert "overloaded" in error


async def test_a_stalled_stream_is_a_transient_error_after_the_stall_timeout(
    server: LoopbackServer,
) -> None:
    began = anthropic_events([{"type": "text", "text": ["Hi"]}])[:3]  # up to the first delta
    server.script(SseReply(parts=(*began, Stall())))
    error, seconds = await timed_failure(
        anthropic_agent(server, timeouts=Timeouts(connect=2.0, first_token=10.0, stall=0.3))
    )
    assert isinstance(error, TransientLLMError)
    assert "stalled: no data for 0.3s (timeouts.stall)" in str(error)
    assert 0.3 <= seconds < 2.0


async def test_a_reply_that_begins_but_gives_no_token_fails_after_the_first_token_timeout(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=(anthropic_message_start(), Stall())))
    error, seconds = await timed_failure(
        anthropic_agent(server, timeouts=Timeouts(connect=2.0, first_token=0.3, stall=10.0))
    )
    assert isinstance(error, TransientLLMError)
    assert "no token came within 0.3s (timeouts.first_token)" in str(error)
    assert 0.3 <= seconds < 2.0


async def test_a_stream_dropped_midway_is_a_transient_error(server: LoopbackServer) -> None:
    server.script(SseReply(parts=(anthropic_message_start(), Drop())))
    error = await fails(anthropic_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "connection was lost mid-stream" in str(error)


async def test_a_stream_that_ends_before_message_stop_is_a_transient_error(
    server: LoopbackServer,
) -> None:
    events = anthropic_events([{"type": "text", "text": ["Hi"]}])
    server.script(SseReply(parts=tuple(events[:-1])))
    error = await fails(anthropic_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "no message_stop" in str(error)


async def test_a_refused_key_is_fatal_and_its_message_never_holds_the_key(
    server: LoopbackServer,
) -> None:
    server.script(anthropic_error(401, "authentication_error", f"invalid x-api-key {KEY}"))
    error = await fails(anthropic_agent(server))
    assert isinstance(error, FatalLLMError)
    message = str(error)
    assert message.startswith(f"agent 'alice' on 127.0.0.1:{server.port}: the API key was refused")
    assert KEY not in "\n".join([message, repr(error), *traceback.format_exception(error)])


async def test_an_unknown_model_is_fatal(server: LoopbackServer) -> None:
    server.script(anthropic_error(404, "not_found_error", "model: claude-test"))
    error = await fails(anthropic_agent(server))
    assert isinstance(error, FatalLLMError)
    assert "claude-test" in str(error)


async def test_a_prompt_too_long_is_a_context_overflow(server: LoopbackServer) -> None:
    server.script(
        anthropic_error(
            400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
        )
    )
    error = await fails(anthropic_agent(server))
    assert isinstance(error, ContextOverflow)


async def test_a_local_server_is_called_without_a_key_when_none_is_set(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    server.script(anthropic_reply("ok"))
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server, api_key=None))
        completion = await backend.complete(ask())
    assert completion.message.content == "ok"
    assert not {"authorization", "x-api-key"} & server.requests[0].headers.keys()


async def test_a_remote_endpoint_without_a_key_fails_naming_the_variable_to_set(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    error = await fails(anthropic_agent(server, api_key=None, base_url="https://api.example.com"))
    assert isinstance(error, FatalLLMError)
    assert "ANTHROPIC_API_KEY" in str(error)
    assert server.requests == []
