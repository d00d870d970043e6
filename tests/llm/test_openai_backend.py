"""The ``openai`` backend against a real Chat Completions server on loopback: what it sends,
and how it assembles what streams back."""

from __future__ import annotations

import pytest

from conclave.actors.llm.errors import FatalLLMError
from conclave.actors.llm.pool import open_backends
from conclave.actors.llm.protocol import (
    ChatMessage,
    CompletionRequest,
    StopReason,
    ToolCall,
    ToolChoice,
    Usage,
)
from conclave.config.schema.openai import MaxTokensParam, ReasoningEffort
from tests.llm.helpers import KEY, VOTE, Recorder, ask, openai_agent
from tests.llm.loopback import JsonReply, LoopbackServer, SseReply, sse_data
from tests.llm.wire import openai_chunk, openai_error, openai_reply, split_bytes


async def test_a_streamed_reply_is_assembled_and_every_delta_reaches_the_sink(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("Hello, world!", text_pieces=4))))
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(), sink=sink)
    assert completion.message == ChatMessage(role="assistant", content="Hello, world!")
    assert [e[1] for e in sink.of("text")] == ["Hell", "o, w", "orld", "!"]
    assert completion.stop_reason is StopReason.END_TURN
    assert completion.model == "test-model"


async def test_tool_calls_are_assembled_per_index_from_interleaved_deltas(
    server: LoopbackServer,
) -> None:
    def call(index: int, arguments: str, **first: str) -> bytes:
        function = {"arguments": arguments, **({"name": first["name"]} if first else {})}
        delta = {"index": index, "function": function, **({"id": first["id"]} if first else {})}
        return openai_chunk({"tool_calls": [delta]})

    server.script(
        SseReply(
            parts=(
                openai_chunk({"role": "assistant"}),
                call(0, "", name="vote", id="call_a"),
                call(1, "", name="new_answer", id="call_b"),
                call(0, '{"agent'),
                call(1, '{"content": '),
                call(0, '_id": "agent2"}'),
                call(1, '"42"}'),
                openai_chunk({}, finish="tool_calls"),
                sse_data("[DONE]"),
            )
        )
    )
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)), sink=sink)
    assert completion.message.tool_calls == (
        ToolCall(id="call_a", name="vote", arguments='{"agent_id": "agent2"}'),
        ToolCall(id="call_b", name="new_answer", arguments='{"content": "42"}'),
    )
    assert sink.of("tool_arguments") == [
        ("tool_arguments", 0, "vote", '{"agent'),
        ("tool_arguments", 1, "new_answer", '{"content": '),
        ("tool_arguments", 0, "vote", '_id": "agent2"}'),
        ("tool_arguments", 1, "new_answer", '"42"}'),
    ]
    assert completion.stop_reason is StopReason.TOOL_USE


async def test_a_delta_with_text_reasoning_and_a_tool_call_at_once_gives_all_three(
    server: LoopbackServer,
) -> None:
    call = {"index": 0, "id": "call_a", "function": {"name": "vote", "arguments": "{}"}}
    delta = {"content": "Hi", "reasoning_content": "hmm", "tool_calls": [call]}
    server.script(
        SseReply(parts=(openai_chunk(delta), openai_chunk({}, finish="stop"), sse_data("[DONE]")))
    )
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)), sink=sink)

    assert completion.message.content == "Hi"
    assert completion.message.tool_calls == (ToolCall(id="call_a", name="vote", arguments="{}"),)
    assert sink.of("reasoning") == [("reasoning", "hmm")]


async def test_events_cut_across_http_chunks_at_any_byte_are_reassembled(
    server: LoopbackServer,
) -> None:
    chunks = openai_reply("split", tool_calls=(("vote", "call_1", ['{"agent_id"', ': "agent1"}']),))
    server.script(SseReply(parts=split_bytes(chunks, 7)))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.message.content == "split"
    assert completion.message.tool_calls[0].arguments == '{"agent_id": "agent1"}'


async def test_malformed_argument_json_is_passed_on_exactly_as_the_model_wrote_it(
    server: LoopbackServer,
) -> None:
    server.script(
        SseReply(
            parts=tuple(openai_reply(tool_calls=(("vote", "call_1", ['{"agent_id": ', "agent1"]),)))
        )
    )
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.message.tool_calls[0].arguments == '{"agent_id": agent1'


async def test_usage_with_cached_and_reasoning_tokens_comes_from_the_last_chunk(
    server: LoopbackServer,
) -> None:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "completion_tokens_details": {"reasoning_tokens": 256},
    }
    server.script(SseReply(parts=tuple(openai_reply("ok", usage=usage))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask())
    assert completion.usage == Usage(
        input_tokens=1200, output_tokens=300, cache_read_tokens=1024, reasoning_tokens=256
    )


@pytest.mark.parametrize("stream_usage", [True, False])
async def test_usage_is_asked_for_unless_stream_usage_is_off(
    server: LoopbackServer, stream_usage: bool
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, stream_usage=stream_usage))
        await backend.complete(ask())
    body = server.requests[0].json
    assert body["stream"] is True
    assert ("stream_options" in body) is stream_usage
    if stream_usage:
        assert body["stream_options"] == {"include_usage": True}


async def test_a_reply_without_usage_says_its_usage_is_unknown_not_zero(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, stream_usage=False))
        completion = await backend.complete(ask())
    assert completion.usage is None


async def test_the_request_carries_the_conversation_tools_and_tool_choice(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    call = ToolCall(id="call_1", name="read_file", arguments='{"path": "a"}')
    request = CompletionRequest(
        messages=(
            ChatMessage(role="system", content="Be brief."),
            ChatMessage(role="user", content="Task"),
            ChatMessage(role="assistant", tool_calls=(call,)),
            ChatMessage(role="tool", content="contents", tool_call_id="call_1"),
        ),
        tools=(VOTE,),
        tool_choice=ToolChoice.REQUIRED,
    )
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        await backend.complete(request)
    body = server.requests[0].json
    assert server.requests[0].path == "/v1/chat/completions"
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Task"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "contents"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "vote",
                "description": "Vote for an answer.",
                "parameters": VOTE.parameters,
            },
        }
    ]
    assert body["tool_choice"] == "required"


async def test_required_tool_choice_is_sent_as_auto_to_a_server_that_lacks_it(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, tool_choice_required=False))
        await backend.complete(ask(tools=(VOTE,), tool_choice=ToolChoice.REQUIRED))
    assert server.requests[0].json["tool_choice"] == "auto"


async def test_a_server_that_refuses_required_tool_choice_is_asked_again_with_auto_and_after(
    server: LoopbackServer,
) -> None:
    server.script(
        openai_error(400, "tool_choice 'required' is not supported by this server"),
        SseReply(parts=tuple(openai_reply("first"))),
        SseReply(parts=tuple(openai_reply("second"))),
    )
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        first = await backend.complete(ask(tools=(VOTE,), tool_choice=ToolChoice.REQUIRED))
        second = await backend.complete(ask(tools=(VOTE,), tool_choice=ToolChoice.REQUIRED))
    assert (first.message.content, second.message.content) == ("first", "second")
    assert [r.json["tool_choice"] for r in server.requests] == ["required", "auto", "auto"]


async def test_a_refused_request_that_is_not_about_tool_choice_is_not_sent_again(
    server: LoopbackServer,
) -> None:
    server.script(openai_error(400, "messages: too many images"))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        with pytest.raises(FatalLLMError, match="too many images"):
            await backend.complete(ask(tools=(VOTE,), tool_choice=ToolChoice.REQUIRED))
    assert len(server.requests) == 1


async def test_a_request_without_tools_sends_no_tool_choice(server: LoopbackServer) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        await backend.complete(ask(tool_choice=ToolChoice.REQUIRED))
    assert "tools" not in server.requests[0].json
    assert "tool_choice" not in server.requests[0].json


@pytest.mark.parametrize("param", list(MaxTokensParam))
async def test_the_output_limit_goes_in_the_field_the_server_knows(
    server: LoopbackServer, param: MaxTokensParam
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    agent = openai_agent(server, max_output_tokens=500, max_tokens_param=param)
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        await backend.complete(ask())
    body = server.requests[0].json
    assert body[param.value] == 500
    other = {p.value for p in MaxTokensParam} - {param.value}
    assert not other & body.keys()


async def test_the_smaller_of_the_rounds_and_the_configs_output_limit_is_sent(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, max_output_tokens=500))
        await backend.complete(ask(max_output_tokens=200))
    assert server.requests[0].json["max_completion_tokens"] == 200


async def test_sampling_settings_headers_and_extra_body_are_sent(server: LoopbackServer) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    agent = openai_agent(
        server,
        temperature=0.3,
        reasoning_effort=ReasoningEffort.LOW,
        extra_headers={"HTTP-Referer": "https://example.org", "X-Title": "Conclave"},
        extra_body={"top_k": 20},
    )
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        await backend.complete(ask())
    request = server.requests[0]
    assert request.json["temperature"] == 0.3
    assert request.json["reasoning_effort"] == "low"
    assert request.json["top_k"] == 20
    assert request.headers["http-referer"] == "https://example.org"
    assert request.headers["x-title"] == "Conclave"
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_streamed_reasoning_goes_to_the_sink_and_not_into_the_reply(
    server: LoopbackServer,
) -> None:
    server.script(
        SseReply(
            parts=(
                openai_chunk({"role": "assistant", "reasoning_content": "Let me think."}),
                openai_chunk({"reasoning": " Done."}),
                openai_chunk({"content": "42"}, finish="stop"),
                sse_data("[DONE]"),
            )
        )
    )
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(), sink=sink)
    assert sink.of("reasoning") == [("reasoning", "Let me think."), ("reasoning", " Done.")]
    assert completion.message.content == "42"


async def test_a_reply_cut_off_at_the_output_limit_stops_with_max_tokens(
    server: LoopbackServer,
) -> None:
    server.script(
        SseReply(parts=tuple(openai_reply(tool_calls=(("vote", "c", ['{"ag']),), finish="length")))
    )
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.stop_reason is StopReason.MAX_TOKENS
    assert completion.message.tool_calls[0].arguments == '{"ag'


async def test_azure_openai_calls_the_deployment_with_the_api_version(
    server: LoopbackServer,
) -> None:
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    agent = openai_agent(
        server, base_url=server.url, api_version="2024-10-21", deployment="prod-gpt"
    )
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        await backend.complete(ask())
    request = server.requests[0]
    assert request.path == "/openai/deployments/prod-gpt/chat/completions?api-version=2024-10-21"
    assert request.headers["api-key"] == KEY


async def test_the_key_is_read_from_the_environment_when_the_config_has_none(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONCLAVE_TEST_KEY", "sk-from-the-environment-123")
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    agent = openai_agent(server, api_key=None, api_key_env="CONCLAVE_TEST_KEY")
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        await backend.complete(ask())
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-the-environment-123"


async def test_a_local_server_is_called_without_a_key_when_none_is_set(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server, api_key=None))
        completion = await backend.complete(ask())
    assert completion.message.content == "ok"
    assert "authorization" not in server.requests[0].headers


async def test_a_remote_endpoint_without_a_key_fails_naming_the_variable_to_set(
    monkeypatch: pytest.MonkeyPatch, server: LoopbackServer
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = openai_agent(server, api_key=None, base_url="https://api.example.com/v1")
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        with pytest.raises(FatalLLMError) as caught:
            await backend.complete(ask())
    message = str(caught.value)
    assert "agent 'alice' on api.example.com" in message
    assert "OPENAI_API_KEY" in message


async def test_a_tool_name_repeated_in_every_delta_is_kept_once(server: LoopbackServer) -> None:
    def delta(arguments: str) -> bytes:
        call = {"index": 0, "id": "c1", "function": {"name": "vote", "arguments": arguments}}
        return openai_chunk({"tool_calls": [call]})

    finish = openai_chunk({}, finish="tool_calls")
    server.script(SseReply(parts=(delta('{"agent_id": '), delta('"agent1"}'), finish)))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.message.tool_calls == (
        ToolCall(id="c1", name="vote", arguments='{"agent_id": "agent1"}'),
    )


async def test_whole_tool_calls_without_an_index_or_an_id_are_numbered_in_order(
    server: LoopbackServer,
) -> None:
    def whole(name: str, arguments: str) -> bytes:
        return openai_chunk({"tool_calls": [{"function": {"name": name, "arguments": arguments}}]})

    server.script(
        SseReply(
            parts=(
                whole("read_file", '{"path": "a"}'),
                whole("read_file", '{"path": "b"}'),
                openai_chunk({}, finish="tool_calls"),
            )
        )
    )
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.message.tool_calls == (
        ToolCall(id="call_0", name="read_file", arguments='{"path": "a"}'),
        ToolCall(id="call_1", name="read_file", arguments='{"path": "b"}'),
    )


@pytest.mark.parametrize(
    ("finish", "with_call", "stop"),
    [
        ("stop", False, StopReason.END_TURN),
        ("stop", True, StopReason.TOOL_USE),
        ("tool_calls", True, StopReason.TOOL_USE),
        ("length", False, StopReason.MAX_TOKENS),
        ("content_filter", False, StopReason.REFUSAL),
        ("something_new", False, StopReason.OTHER),
    ],
)
async def test_the_finish_reason_becomes_the_stop_reason(
    server: LoopbackServer, finish: str, with_call: bool, stop: StopReason
) -> None:
    calls = (("vote", "c1", ["{}"]),) if with_call else ()
    server.script(SseReply(parts=tuple(openai_reply("x", tool_calls=calls, finish=finish))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.stop_reason is stop


async def test_prompt_tokens_written_to_the_cache_are_counted_where_reported(
    server: LoopbackServer,
) -> None:
    usage = {
        "prompt_tokens": 900,
        "completion_tokens": 10,
        "total_tokens": 910,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 800},
    }
    server.script(SseReply(parts=tuple(openai_reply("ok", usage=usage))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask())
    assert completion.usage == Usage(input_tokens=900, output_tokens=10, cache_write_tokens=800)


async def test_a_redirect_is_followed(server: LoopbackServer) -> None:
    server.script(
        JsonReply(status=307, body={}, headers={"location": "/v2/chat/completions"}),
        SseReply(parts=tuple(openai_reply("moved"))),
    )
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        completion = await backend.complete(ask())
    assert completion.message.content == "moved"
    assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v2/chat/completions"]


async def test_the_organization_and_project_in_the_environment_are_sent_as_the_sdk_sent_them(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-conclave")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-conclave")
    server.script(SseReply(parts=tuple(openai_reply("ok"))))
    async with open_backends() as pool:
        backend = await pool.backend(openai_agent(server))
        await backend.complete(ask())
    headers = server.requests[0].headers
    assert (headers["openai-organization"], headers["openai-project"]) == (
        "org-conclave",
        "proj-conclave",
    )


async def test_with_a_proxy_in_the_environment_requests_go_through_it(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server plays the proxy: a host that resolves nowhere is reached only through it.
    for variable in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.url)
    server.script(SseReply(parts=tuple(openai_reply("proxied"))))
    agent = openai_agent(server, base_url="http://conclave.invalid/v1")
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        completion = await backend.complete(ask())
    assert completion.message.content == "proxied"
    assert server.requests[0].path == "http://conclave.invalid/v1/chat/completions"
