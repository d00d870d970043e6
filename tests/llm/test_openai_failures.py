"""How the ``openai`` backend fails, against a real server that misbehaves on cue: each
failure is classified by what the caller should do (retry, exclude the agent, shorten the
prompt), and no message carries a key."""

from __future__ import annotations

import socket
import traceback

import pytest
import trio

from conclave.actors.llm.errors import ContextOverflow, FatalLLMError, TransientLLMError
from conclave.actors.llm.pool import open_backends
from conclave.config.schema.endpoint import Timeouts
from tests.llm.helpers import KEY, Recorder, ask, fails, openai_agent, timed_failure
from tests.llm.loopback import (
    Drop,
    Hangup,
    JsonReply,
    LoopbackServer,
    Pause,
    Recorded,
    Reply,
    SseReply,
    Stall,
    sse_data,
)
from tests.llm.wire import openai_chunk, openai_error, openai_reply


def _everything_about(error: BaseException) -> str:
    """Every string a writer of this error could show: message, repr and traceback."""
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


async def test_a_429_is_retried_after_its_retry_after_and_the_retry_reaches_the_sink(
    server: LoopbackServer,
) -> None:
    server.script(
        openai_error(429, "slow down", **{"retry-after": "0.3"}),
        SseReply(parts=tuple(openai_reply("ok"))),
    )
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, max_retries=2))
        started = trio.current_time()
        completion = await backend.complete(ask(), sink=sink)
    assert completion.message.content == "ok"
    [(_, attempt, status, delay, error)] = sink.of("retry")
    assert (attempt, status) == (1, 429)
    assert 0.3 <= delay <= 0.5  # the server's wait, or the back-off's draw if longer
    assert "slow down" in error
    assert trio.current_time() - started >= 0.3
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1"]


async def test_a_server_failing_with_500_forever_is_a_transient_error_after_the_retries(
    server: LoopbackServer,
) -> None:
    server.handler = lambda _request: openai_error(500, "internal error")
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, max_retries=1))
        with pytest.raises(TransientLLMError, match="500") as caught:
            await backend.complete(ask(), sink=sink)
    assert len(server.requests) == 2
    assert [event[:3] for event in sink.of("retry")] == [("retry", 1, 500)]
    assert "agent 'alice'" in str(caught.value)


async def test_a_stalled_stream_is_a_transient_error_after_the_stall_timeout(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}), Stall())))
    error, seconds = await timed_failure(
        openai_agent(server, timeouts=Timeouts(connect=2.0, stall=0.3))
    )
    assert isinstance(error, TransientLLMError)
    assert "stalled" in str(error)
    assert 0.3 <= seconds < 2.0


async def test_a_stream_dropped_midway_is_a_transient_error(server: LoopbackServer) -> None:
    server.script(SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}), Drop())))
    error = await fails(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "connection was lost mid-stream" in str(error)


async def test_a_stream_that_ends_without_finishing_the_reply_is_a_transient_error(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}),)))
    error = await fails(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "no finish_reason" in str(error)


async def test_an_error_sent_in_the_stream_is_a_transient_error(server: LoopbackServer) -> None:
    server.script(
        SseReply(
            parts=(
                openai_chunk({"role": "assistant", "content": "Hi"}),
                sse_data({"error": {"message": "upstream overloaded", "type": "server_error"}}),
            )
        )
    )
    error = await fails(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "upstream overloaded" in str(error)


async def test_a_refused_key_is_fatal_and_names_the_agent_the_host_and_the_cause_never_the_key(
    server: LoopbackServer,
) -> None:
    server.script(openai_error(401, f"Incorrect API key provided: {KEY}.", code="invalid_api_key"))
    error = await fails(openai_agent(server))
    assert isinstance(error, FatalLLMError)
    message = str(error)
    assert message.startswith(f"agent 'alice' on 127.0.0.1:{server.port}: the API key was refused")
    assert "401" in message
    assert "check api_key" in message
    assert "\n" not in message
    assert KEY not in _everything_about(error)
    assert "[REDACTED]" in message


async def test_a_key_shaped_string_in_an_error_is_redacted_even_if_it_is_not_ours(
    server: LoopbackServer,
) -> None:
    other = "sk-ant-api03-SOMEONE-ELSES-KEY-0123456789"
    server.script(openai_error(403, f"key {other} may not use this model"))
    error = await fails(openai_agent(server))
    assert isinstance(error, FatalLLMError)
    assert other not in _everything_about(error)


async def test_an_unknown_model_is_fatal(server: LoopbackServer) -> None:
    server.script(
        openai_error(404, "The model `test-model` does not exist", code="model_not_found")
    )
    error = await fails(openai_agent(server))
    assert isinstance(error, FatalLLMError)
    assert "check the model name 'test-model'" in str(error)


async def test_a_refused_connection_is_fatal(server: LoopbackServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    error = await fails(openai_agent(server, base_url=f"http://127.0.0.1:{closed_port}/v1"))
    assert isinstance(error, FatalLLMError)
    assert f"agent 'alice' on 127.0.0.1:{closed_port}: cannot connect" in str(error)
    assert "connection refused" in str(error)


async def test_a_host_name_that_does_not_resolve_is_fatal(server: LoopbackServer) -> None:
    error = await fails(openai_agent(server, base_url="http://conclave-no-such-host.invalid/v1"))
    assert isinstance(error, FatalLLMError)
    assert "conclave-no-such-host.invalid" in str(error)
    assert "could not be resolved" in str(error)


async def test_an_exceeded_context_length_is_a_context_overflow(server: LoopbackServer) -> None:
    server.script(
        openai_error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens.",
            code="context_length_exceeded",
        )
    )
    error = await fails(openai_agent(server))
    assert isinstance(error, ContextOverflow)


async def test_an_exhausted_quota_is_fatal_although_it_comes_as_a_429(
    server: LoopbackServer,
) -> None:
    server.script(openai_error(429, "You exceeded your current quota", code="insufficient_quota"))
    error = await fails(openai_agent(server))
    assert isinstance(error, FatalLLMError)


async def test_a_request_the_server_refuses_is_fatal_and_quotes_the_server(
    server: LoopbackServer,
) -> None:
    server.script(openai_error(400, "tool_choice 'required' is not supported"))
    error = await fails(openai_agent(server))
    assert isinstance(error, FatalLLMError)
    assert "tool_choice 'required' is not supported" in str(error)


async def test_the_total_timeout_bounds_the_whole_call(server: LoopbackServer) -> None:
    server.script(
        SseReply(parts=(openai_chunk({"role": "assistant", "content": "Hi"}), Pause(5.0)))
    )
    error, seconds = await timed_failure(
        openai_agent(server, timeouts=Timeouts(connect=2.0, stall=10.0, total=0.3))
    )
    assert isinstance(error, TransientLLMError)
    assert "took longer than 0.3s (timeouts.total)" in str(error)
    assert seconds < 2.0


async def test_a_server_error_body_that_is_not_json_is_quoted(server: LoopbackServer) -> None:
    server.script(JsonReply(status=502, body="bad gateway"))
    error = await fails(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "502" in str(error)


async def test_a_connection_closed_before_any_reply_is_a_transient_error(
    server: LoopbackServer,
) -> None:
    server.script(Hangup())
    error = await fails(openai_agent(server))
    assert isinstance(error, TransientLLMError)
    assert "connection was lost before the reply began" in str(error)


async def test_a_reply_that_never_begins_is_a_transient_error_after_the_first_byte_timeout(
    server: LoopbackServer,
) -> None:
    async def never(_request: Recorded) -> Reply:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    server.handler = never
    error, seconds = await timed_failure(
        openai_agent(server, timeouts=Timeouts(connect=2.0, first_byte=0.3), max_retries=2)
    )
    assert isinstance(error, TransientLLMError)
    assert "no reply began within 0.3s (timeouts.first_byte)" in str(error)
    assert len(server.requests) == 1  # a timeout is a failed try, not retried at once
    assert 0.3 <= seconds < 2.0


async def test_a_server_that_does_not_accept_connections_is_a_transient_connect_timeout(
    server: LoopbackServer,
) -> None:
    with socket.socket() as full, socket.socket() as queued:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        queued.connect(full.getsockname())  # fills the queue: the next connect hangs
        error = await fails(
            openai_agent(
                server,
                base_url=f"http://127.0.0.1:{full.getsockname()[1]}/v1",
                timeouts=Timeouts(connect=0.3, stall=2.0),
            )
        )
    assert isinstance(error, TransientLLMError)
    assert "could not connect within 0.3s (timeouts.connect)" in str(error)
