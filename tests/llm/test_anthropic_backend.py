"""The ``anthropic`` backend against a real Messages API server on loopback: how a transcript
becomes a request (system, blocks, thinking, caching), and how a reply is assembled."""

from __future__ import annotations

from typing import Any

import pytest

from conclave.actors.llm.anthropic_backend import STATE_KEY
from conclave.actors.llm.pool import open_backends
from conclave.actors.llm.protocol import (
    ChatMessage,
    CompletionRequest,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolSchema,
    Usage,
)
from conclave.config.schema import AgentConfig
from tests.llm.helpers import KEY, VOTE, Recorder, anthropic_agent, ask
from tests.llm.loopback import LoopbackServer, SseReply
from tests.llm.wire import anthropic_events, anthropic_reply, split_bytes

READ = ToolSchema(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    read_only=True,
)
EPHEMERAL = {"type": "ephemeral"}


async def _send(
    server: LoopbackServer, request: CompletionRequest, agent: AgentConfig | None = None
) -> dict[str, Any]:
    """The body the backend sent for ``request``."""
    server.script(anthropic_reply("ok"))
    async with open_backends() as pool:
        backend = await pool.backend(agent or anthropic_agent(server))
        await backend.complete(request)
    body: dict[str, Any] = server.requests[-1].json
    return body


def _uncached(server: LoopbackServer) -> AgentConfig:
    """An agent whose requests carry no cache marks: for tests of the blocks' shapes (the
    marks are tested apart)."""
    return anthropic_agent(server, prompt_caching=False)


async def test_a_streamed_reply_is_assembled_and_every_delta_reaches_the_sink(
    server: LoopbackServer,
) -> None:
    server.script(
        SseReply(parts=tuple(anthropic_events([{"type": "text", "text": ["Hel", "lo"]}])))
    )
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server))
        completion = await backend.complete(ask(), sink=sink)
    assert completion.message == ChatMessage(role="assistant", content="Hello")
    assert sink.of("text") == [("text", "Hel"), ("text", "lo")]
    assert completion.stop_reason is StopReason.END_TURN
    assert completion.model == "claude-test"
    assert server.requests[0].path == "/v1/messages"
    assert KEY in (server.requests[0].headers.get("x-api-key", ""), _bearer(server))


def _bearer(server: LoopbackServer) -> str:
    return server.requests[0].headers.get("authorization", "").removeprefix("Bearer ")


async def test_the_system_prompt_goes_in_system_marked_as_the_end_of_the_cached_prefix(
    server: LoopbackServer,
) -> None:
    request = CompletionRequest(
        messages=(
            ChatMessage(role="system", content="You are careful."),
            ChatMessage(role="user", content="Task"),
        ),
        tools=(VOTE,),
    )
    body = await _send(server, request)
    assert body["system"] == [
        {"type": "text", "text": "You are careful.", "cache_control": EPHEMERAL}
    ]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Task"}]}]
    assert "cache_control" not in body["tools"][0]


async def test_without_a_system_prompt_the_last_tool_ends_the_cached_prefix(
    server: LoopbackServer,
) -> None:
    body = await _send(server, ask(tools=(READ, VOTE)))
    assert "system" not in body
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1] == {
        "name": "vote",
        "description": "Vote for an answer.",
        "input_schema": VOTE.parameters,
        "cache_control": EPHEMERAL,
    }


async def test_prompt_caching_can_be_turned_off(server: LoopbackServer) -> None:
    request = CompletionRequest(
        messages=(ChatMessage(role="system", content="S"), ChatMessage(role="user", content="T")),
        tools=(VOTE,),
    )
    body = await _send(server, request, anthropic_agent(server, prompt_caching=False))
    assert "cache_control" not in body["system"][0]
    assert "cache_control" not in body["tools"][0]


def _marked(body: dict[str, Any]) -> list[str]:
    """The text or kind of every block that carries a cache mark, in request order."""
    blocks = [*body.get("tools", ()), *body.get("system", ())]
    blocks += [block for turn in body["messages"] for block in turn["content"]]
    return [b.get("text") or b.get("name") or b["type"] for b in blocks if "cache_control" in b]


ROUND = (
    ChatMessage(role="system", content="The rules."),
    ChatMessage(role="user", content="The task and the answers.", cache_point=True),
    ChatMessage(role="user", content="You are agent2."),
)


async def test_a_rounds_shared_task_and_answers_are_marked_as_a_cached_prefix(
    server: LoopbackServer,
) -> None:
    body = await _send(server, CompletionRequest(messages=ROUND, tools=(VOTE,)))

    assert _marked(body) == ["The rules.", "The task and the answers."]


async def test_once_a_tool_loop_is_under_way_its_last_block_is_marked_too(
    server: LoopbackServer,
) -> None:
    call = ToolCall(id="toolu_1", name="read_file", arguments='{"path": "a"}')
    request = CompletionRequest(
        messages=(
            *ROUND,
            ChatMessage(role="assistant", tool_calls=(call,)),
            ChatMessage(role="tool", content="contents of a", tool_call_id="toolu_1"),
        ),
        tools=(READ, VOTE),
    )

    body = await _send(server, request)

    assert _marked(body) == ["The rules.", "The task and the answers.", "tool_result"]
    assert len(_marked(body)) <= 4  # the API's limit


async def test_a_request_of_one_turn_marks_no_message(server: LoopbackServer) -> None:
    body = await _send(server, ask("Task", tools=(VOTE,)))

    assert _marked(body) == ["vote"]


async def test_without_prompt_caching_nothing_is_marked(server: LoopbackServer) -> None:
    request = CompletionRequest(messages=ROUND, tools=(VOTE,))

    assert _marked(await _send(server, request, _uncached(server))) == []


async def test_tool_calls_and_results_become_blocks_and_consecutive_results_share_a_turn(
    server: LoopbackServer,
) -> None:
    calls = (
        ToolCall(id="toolu_1", name="read_file", arguments='{"path": "a"}'),
        ToolCall(id="toolu_2", name="read_file", arguments='{"path": "b"}'),
    )
    request = CompletionRequest(
        messages=(
            ChatMessage(role="user", content="Task"),
            ChatMessage(role="assistant", content="Reading both.", tool_calls=calls),
            ChatMessage(role="tool", content="A", tool_call_id="toolu_1"),
            ChatMessage(role="tool", content="B", tool_call_id="toolu_2"),
            ChatMessage(role="user", content="Now vote."),
        ),
        tools=(READ, VOTE),
    )
    body = await _send(server, request, _uncached(server))
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Task"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B"},
                {"type": "text", "text": "Now vote."},
            ],
        },
    ]


async def test_a_call_with_malformed_arguments_is_sent_back_with_them_as_written(
    server: LoopbackServer,
) -> None:
    call = ToolCall(id="toolu_1", name="vote", arguments='{"agent_id": agent1')
    request = CompletionRequest(
        messages=(
            ChatMessage(role="user", content="Task"),
            ChatMessage(role="assistant", tool_calls=(call,)),
            ChatMessage(role="tool", content="Error: not JSON", tool_call_id="toolu_1"),
        ),
    )
    body = await _send(server, request)
    assert body["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "vote",
            "input": {"invalid_json": '{"agent_id": agent1'},
        }
    ]


async def test_tool_use_arguments_are_assembled_across_deltas_and_http_chunks(
    server: LoopbackServer,
) -> None:
    events = anthropic_events(
        [
            {"type": "text", "text": ["Voting."]},
            {"type": "tool_use", "id": "toolu_1", "name": "vote", "json": ['{"agent', '_id": "a']},
            {"type": "tool_use", "id": "toolu_2", "name": "vote", "json": ['{"agent_id": "b"}']},
        ],
        stop_reason="tool_use",
    )
    server.script(SseReply(parts=split_bytes(events, 11)))
    sink = Recorder()
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)), sink=sink)
    assert completion.message.content == "Voting."
    assert completion.message.tool_calls == (
        ToolCall(id="toolu_1", name="vote", arguments='{"agent_id": "a'),
        ToolCall(id="toolu_2", name="vote", arguments='{"agent_id": "b"}'),
    )
    assert sink.of("tool_arguments") == [
        ("tool_arguments", 0, "vote", '{"agent'),
        ("tool_arguments", 0, "vote", '_id": "a'),
        ("tool_arguments", 1, "vote", '{"agent_id": "b"}'),
    ]
    assert completion.stop_reason is StopReason.TOOL_USE


async def test_thinking_blocks_are_kept_in_provider_state_and_sent_back_first(
    server: LoopbackServer,
) -> None:
    server.script(
        SseReply(
            parts=tuple(
                anthropic_events(
                    [
                        {"type": "thinking", "thinking": ["Let me ", "check."], "signature": "s1"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "json": ["{}"]},
                    ],
                    stop_reason="tool_use",
                )
            )
        ),
        anthropic_reply("done"),
    )
    sink = Recorder()
    agent = anthropic_agent(server, thinking_budget=2048)
    async with open_backends() as pool:
        backend = await pool.backend(agent)
        first = await backend.complete(ask(tools=(READ,)), sink=sink)
        thinking = [
            {"type": "thinking", "thinking": "Let me check.", "signature": "s1"},
            {"type": "redacted_thinking", "data": "opaque"},
        ]
        assert first.message.provider_state == {STATE_KEY: thinking}
        assert sink.of("reasoning") == [("reasoning", "Let me "), ("reasoning", "check.")]
        follow_up = CompletionRequest(
            messages=(
                ChatMessage(role="user", content="hi"),
                first.message,
                ChatMessage(role="tool", content="file", tool_call_id="toolu_1"),
            ),
            tools=(READ,),
        )
        await backend.complete(follow_up)
    sent = server.requests[1].json["messages"][1]["content"]
    assert sent[:2] == thinking
    assert sent[2]["type"] == "tool_use"


async def test_extended_thinking_sends_its_budget_and_asks_for_tools_with_auto(
    server: LoopbackServer,
) -> None:
    agent = anthropic_agent(server, thinking_budget=2048, max_output_tokens=4096)
    body = await _send(server, ask(tools=(VOTE,), tool_choice=ToolChoice.REQUIRED), agent)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096
    assert body["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize(
    ("choice", "sent"),
    [(ToolChoice.REQUIRED, "any"), (ToolChoice.AUTO, "auto"), (ToolChoice.NONE, "none")],
)
async def test_tool_choice_is_sent_in_the_messages_api_words(
    server: LoopbackServer, choice: ToolChoice, sent: str
) -> None:
    body = await _send(server, ask(tools=(VOTE,), tool_choice=choice))
    assert body["tool_choice"] == {"type": sent}
    assert "thinking" not in body


async def test_max_tokens_is_always_sent_and_the_rounds_smaller_limit_wins(
    server: LoopbackServer,
) -> None:
    assert (await _send(server, ask()))["max_tokens"] == 8192
    assert (await _send(server, ask(max_output_tokens=300)))["max_tokens"] == 300


async def test_usage_counts_prompt_tokens_read_from_and_written_to_the_cache(
    server: LoopbackServer,
) -> None:
    usage = {
        "input_tokens": 50,
        "cache_read_input_tokens": 2000,
        "cache_creation_input_tokens": 300,
    }
    server.script(anthropic_reply("ok", usage=usage, output_tokens=40))
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server))
        completion = await backend.complete(ask())
    assert completion.usage == Usage(
        input_tokens=2350, output_tokens=40, cache_read_tokens=2000, cache_write_tokens=300
    )


async def test_a_reply_cut_off_at_the_output_limit_stops_with_max_tokens(
    server: LoopbackServer,
) -> None:
    server.script(anthropic_reply("Half an ans", stop_reason="max_tokens"))
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server))
        completion = await backend.complete(ask())
    assert completion.stop_reason is StopReason.MAX_TOKENS


async def test_temperature_headers_and_extra_body_are_sent(server: LoopbackServer) -> None:
    agent = anthropic_agent(
        server, temperature=0.2, extra_headers={"anthropic-beta": "x"}, extra_body={"top_k": 5}
    )
    body = await _send(server, ask(), agent)
    assert body["temperature"] == 0.2
    assert body["top_k"] == 5
    assert server.requests[-1].headers["anthropic-beta"] == "x"


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", StopReason.END_TURN),
        ("stop_sequence", StopReason.END_TURN),
        ("tool_use", StopReason.TOOL_USE),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("model_context_window_exceeded", StopReason.MAX_TOKENS),
        ("refusal", StopReason.REFUSAL),
        ("pause_turn", StopReason.OTHER),
    ],
)
async def test_the_stop_reason_is_mapped(
    server: LoopbackServer, reason: str, stop: StopReason
) -> None:
    server.script(anthropic_reply("x", stop_reason=reason))
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server))
        completion = await backend.complete(ask())
    assert completion.stop_reason is stop


async def test_a_tool_call_that_streamed_no_arguments_has_its_starting_input(
    server: LoopbackServer,
) -> None:
    blocks = [{"type": "tool_use", "id": "toolu_1", "name": "vote", "json": []}]
    server.script(SseReply(parts=tuple(anthropic_events(blocks, stop_reason="tool_use"))))
    async with open_backends() as pool:
        backend = await pool.backend(anthropic_agent(server))
        completion = await backend.complete(ask(tools=(VOTE,)))
    assert completion.message.tool_calls == (ToolCall(id="toolu_1", name="vote", arguments="{}"),)


@pytest.mark.parametrize(("round_limit", "budget"), [(3000, 2999), (1000, None)])
async def test_the_thinking_budget_shrinks_below_a_smaller_output_limit_or_is_dropped(
    server: LoopbackServer, round_limit: int, budget: int | None
) -> None:
    agent = anthropic_agent(server, thinking_budget=4096)
    body = await _send(server, ask(max_output_tokens=round_limit), agent)
    assert body.get("thinking") == (
        None if budget is None else {"type": "enabled", "budget_tokens": budget}
    )


async def test_empty_messages_are_sent_as_placeholders_the_api_accepts(
    server: LoopbackServer,
) -> None:
    request = CompletionRequest(
        messages=(
            ChatMessage(role="user", content=""),
            ChatMessage(role="assistant", content=""),
            ChatMessage(role="user", content="again"),
        )
    )
    body = await _send(server, request, _uncached(server))
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "(empty)"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "(empty reply)"}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]


async def test_an_empty_tool_result_is_sent_as_a_placeholder(server: LoopbackServer) -> None:
    call = ToolCall(id="toolu_1", name="read_file", arguments="{}")
    request = CompletionRequest(
        messages=(
            ChatMessage(role="user", content="Task"),
            ChatMessage(role="assistant", tool_calls=(call,)),
            ChatMessage(role="tool", content="", tool_call_id="toolu_1"),
        )
    )
    body = await _send(server, request, _uncached(server))
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "(no output)"}
    ]
