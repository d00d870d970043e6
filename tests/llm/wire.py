"""Replies as the two protocols put them on the wire, for the loopback server to send.

``openai_*`` build Chat Completions chunks (``data:`` events ending in ``[DONE]``);
``anthropic_*`` build Messages API events (named events ending in ``message_stop``).
"""

from __future__ import annotations

from typing import Any

from tests.llm.loopback import JsonReply, Part, SseReply, sse_data, sse_event

__all__ = [
    "anthropic_error",
    "anthropic_events",
    "anthropic_reply",
    "openai_chunk",
    "openai_error",
    "openai_reply",
    "split_bytes",
]


def openai_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "test-model",
) -> bytes:
    """One chunk; without ``delta`` it is the usage chunk, whose ``choices`` is empty."""
    data: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        data["usage"] = usage
    return sse_data(data)


def openai_reply(
    text: str = "",
    *,
    tool_calls: tuple[tuple[str, str, list[str]], ...] = (),
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    text_pieces: int = 1,
) -> list[bytes]:
    """The chunks of a reply: ``text`` in ``text_pieces`` deltas, then each tool call
    ``(name, id, [argument fragments])`` one fragment per delta, then the finish, the usage
    chunk and ``[DONE]``."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    if text:
        size = max(1, -(-len(text) // text_pieces))
        chunks += [openai_chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    for index, (name, call_id, fragments) in enumerate(tool_calls):
        chunks.append(
            openai_chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [
            openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            for fragment in fragments
        ]
    chunks.append(openai_chunk({}, finish=finish or ("tool_calls" if tool_calls else "stop")))
    if usage is not None:
        chunks.append(openai_chunk(usage=usage))
    chunks.append(sse_data("[DONE]"))
    return chunks


def openai_error(
    status: int, message: str, *, code: str | None = None, **headers: str
) -> JsonReply:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    error: dict[str, Any] = {"message": message, "type": kind, "code": code}
    return JsonReply(status=status, body={"error": error}, headers=headers)


def split_bytes(parts: list[bytes], size: int) -> tuple[Part, ...]:
    """The same bytes re-cut into pieces of ``size`` bytes: events and lines split across
    HTTP chunks."""
    data = b"".join(parts)
    return tuple(data[i : i + size] for i in range(0, len(data), size))


def _message_start(usage: dict[str, Any]) -> bytes:
    return sse_event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 1, **usage},
            },
        },
    )


def anthropic_events(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    output_tokens: int = 5,
) -> list[bytes]:
    """The events of a reply whose content ``blocks`` are given as
    ``{"type": "text", "text": [pieces]}``, ``{"type": "thinking", "thinking": [pieces],
    "signature": sig}``, ``{"type": "redacted_thinking", "data": d}`` or
    ``{"type": "tool_use", "id": id, "name": name, "json": [pieces]}``."""
    events = [_message_start(usage or {})]
    for index, block in enumerate(blocks):
        kind = block["type"]
        start: dict[str, Any]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in block["text"]]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in block["thinking"]]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "redacted_thinking":
            start = {"type": "redacted_thinking", "data": block["data"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece} for piece in block["json"]
            ]
        events.append(
            sse_event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events += [
            sse_event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            for delta in deltas
        ]
        events.append(
            sse_event("content_block_stop", {"type": "content_block_stop", "index": index})
        )
    events.append(
        sse_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(sse_event("message_stop", {"type": "message_stop"}))
    return events


def anthropic_reply(text: str = "ok", **kwargs: Any) -> SseReply:
    return SseReply(parts=tuple(anthropic_events([{"type": "text", "text": [text]}], **kwargs)))


def anthropic_error(status: int, error_type: str, message: str, **headers: str) -> JsonReply:
    return JsonReply(
        status=status,
        body={"type": "error", "error": {"type": error_type, "message": message}},
        headers=headers,
    )


def anthropic_message_start(usage: dict[str, Any] | None = None) -> bytes:
    return _message_start(usage or {})
