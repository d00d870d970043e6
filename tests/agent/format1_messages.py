"""The messages in ``fixtures/transcripts_format1.jsonl``: what main wrote at fd27407, before
transcript format 2 (one line per message, no header), so that readers of today are held
to reading the files runs wrote then. Each entry: agent, round, purpose, message."""

from __future__ import annotations

import json

from conclave.actors.llm.protocol import ChatMessage, ToolCall

ANSWER = "".join(f"line {n} of an answer long enough to be cut in pieces\n" for n in range(60))
SYSTEM = "You are one of 2 agents working on the same task. " * 8
CALL = ToolCall(id="c1", name="new_answer", arguments=json.dumps({"content": ANSWER}))

WRITTEN: list[tuple[str, int, str, ChatMessage]] = [
    ("a1", 1, "round", ChatMessage(role="system", content=SYSTEM)),
    ("a1", 1, "round", ChatMessage(role="user", content="Plan the release.")),
    ("a2", 1, "round", ChatMessage(role="system", content=SYSTEM)),
    ("a1", 1, "round", ChatMessage(role="assistant", content="", tool_calls=(CALL,))),
    ("a2", 1, "round", ChatMessage(role="user", content=f"<answers>\n{ANSWER}</answers>\n")),
    (
        "a2",
        1,
        "round",
        ChatMessage(
            role="assistant",
            content="Reading it.",
            tool_calls=(ToolCall(id="c2", name="read_file", arguments='{"path":"a.txt"}'),),
            provider_state={"reasoning": "opaque"},
        ),
    ),
    ("a2", 1, "round", ChatMessage(role="tool", content="the file's text", tool_call_id="c2")),
    ("a1", 2, "present", ChatMessage(role="user", content=f"Present:\n{ANSWER}")),
]
