"""Transcript format 2: a header, a line per batch of messages appended together, a message
said again written as a reference to it; and files written before it (format 1) read as
they were written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conclave.actors.agent.transcript_lines import (
    FORMAT,
    GENERATION_MESSAGES,
    SAME_MIN_CHARS,
)
from conclave.actors.agent.transcript_log import (
    TranscriptError,
    TranscriptFile,
    TranscriptLog,
    read_transcripts,
)
from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from tests.agent.format1_messages import WRITTEN
from tests.agent.harness import transcript_entry

FORMAT1 = Path(__file__).parent / "fixtures" / "transcripts_format1.jsonl"
SYSTEM = ChatMessage(role="system", content="You are one of many agents. " * 10)


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines()]


def _logs(path: Path, *agents: str) -> list[TranscriptLog]:
    file = TranscriptFile(path)
    return [TranscriptLog(file, agent=a, on_failure=lambda error: None) for a in agents]


def test_a_file_written_before_format_2_reads_as_it_was_written() -> None:
    assert "format" not in _raw(FORMAT1)[0]  # written by main at fd27407
    assert list(read_transcripts(FORMAT1)) == [transcript_entry(*entry) for entry in WRITTEN]


def test_the_same_messages_written_now_read_back_as_the_format_1_file_does(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcripts.jsonl"
    file = TranscriptFile(path)
    logs: dict[str, TranscriptLog] = {}
    for agent, round_, purpose, message in WRITTEN:
        log = logs.setdefault(agent, TranscriptLog(file, agent=agent, on_failure=print))
        log.write(round_, CallPurpose(purpose), message)

    assert _raw(path)[0] == {"format": FORMAT}
    assert list(read_transcripts(path)) == list(read_transcripts(FORMAT1))
    assert path.stat().st_size < FORMAT1.stat().st_size  # the system prompt is written once


def test_messages_appended_together_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    [log] = _logs(path, "a1")
    prompt = (SYSTEM, ChatMessage(role="user", content="the task"))
    log.write(1, CallPurpose.ROUND, *prompt)
    log.write(1, CallPurpose.ROUND, ChatMessage(role="assistant", content="done"))

    _, first, second = _raw(path)
    assert [m["content"] for m in first["messages"]] == [SYSTEM.content, "the task"]
    assert [m["content"] for m in second["messages"]] == ["done"]
    assert [line["content"] for line in read_transcripts(path)] == [
        SYSTEM.content,
        "the task",
        "done",
    ]


def test_a_message_said_again_is_written_as_a_reference_and_read_in_full(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcripts.jsonl"
    first, second = _logs(path, "a1", "a2")
    first.write(1, CallPurpose.ROUND, SYSTEM)
    second.write(1, CallPurpose.ROUND, SYSTEM)
    first.write(2, CallPurpose.ROUND, SYSTEM)

    _, *lines = _raw(path)
    assert [line["messages"] for line in lines[1:]] == [[{"same": 1}], [{"same": 1}]]
    assert [(line["agent"], line["round"], line["role"]) for line in read_transcripts(path)] == [
        ("a1", 1, "system"),
        ("a2", 1, "system"),
        ("a1", 2, "system"),
    ]
    assert {line["content"] for line in read_transcripts(path)} == {SYSTEM.content}


def test_short_messages_and_the_same_text_in_another_role_are_written_in_full(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcripts.jsonl"
    [log] = _logs(path, "a1")
    short = "x" * (SAME_MIN_CHARS - 1)
    for message in (
        ChatMessage(role="user", content=short),
        ChatMessage(role="user", content=short),
        SYSTEM,
        ChatMessage(role="user", content=SYSTEM.content),
    ):
        log.write(1, CallPurpose.ROUND, message)

    _, *lines = _raw(path)
    assert all("same" not in line["messages"][0] for line in lines)
    assert [line["role"] for line in read_transcripts(path)] == ["user", "user", "system", "user"]


def test_a_message_out_of_reach_is_written_in_full_again(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    [log] = _logs(path, "a1")
    log.write(1, CallPurpose.ROUND, SYSTEM)
    others = [
        ChatMessage(role="user", content=f"{n:>{SAME_MIN_CHARS}}")
        for n in range(2 * GENERATION_MESSAGES)
    ]
    log.write(1, CallPurpose.ROUND, *others)
    log.write(2, CallPurpose.ROUND, SYSTEM)

    last = _raw(path)[-1]["messages"][0]
    assert last["content"] == SYSTEM.content
    assert list(read_transcripts(path))[-1]["content"] == SYSTEM.content


def test_files_appended_to_one_another_read_each_with_its_own_numbers(tmp_path: Path) -> None:
    first, second, joined = (tmp_path / name for name in ("one.jsonl", "two.jsonl", "all.jsonl"))
    for path, words in ((first, "first. "), (second, "second. ")):
        [log] = _logs(path, "a1")
        log.write(1, CallPurpose.ROUND, ChatMessage(role="system", content=words * 40))
        log.write(2, CallPurpose.ROUND, ChatMessage(role="system", content=words * 40))
    with joined.open("wb") as out:
        for path in (first, second):
            with path.open("rb") as part:
                shutil.copyfileobj(part, out)

    assert [line["content"][:6] for line in read_transcripts(joined)] == ["first."] * 2 + [
        "second"
    ] * 2


def test_a_file_in_a_newer_format_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    path.write_text(f'{{"format": {FORMAT + 1}}}\n')

    with pytest.raises(TranscriptError, match=rf"transcripts.jsonl:1: .* format {FORMAT + 1};"):
        list(read_transcripts(path))


def test_a_reference_to_a_message_no_line_wrote_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    line = {"agent": "a1", "round": 1, "purpose": "round", "messages": [{"same": 4}]}
    path.write_text('{"format": 2}\n' + json.dumps(line) + "\n")

    with pytest.raises(TranscriptError, match=r"transcripts.jsonl:2: message 4 was not written"):
        list(read_transcripts(path))


def test_long_texts_anywhere_in_a_batch_read_back_as_said(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    [log] = _logs(path, "a1")
    answer = "".join(f"line {n} of an answer\n" for n in range(200))
    said = (
        ChatMessage(role="user", content="short"),
        ChatMessage(role="user", content=f"<answers>\n{answer}</answers>\n"),
        ChatMessage(role="user", content=f"Present:\n{answer}"),
    )
    log.write(1, CallPurpose.ROUND, *said)
    log.write(1, CallPurpose.ROUND, *said[1:])

    _, first, second = _raw(path)
    assert sorted(first["pieces"]) == ["/messages/1/content", "/messages/2/content"]
    assert len(json.dumps(second)) < len(answer) / 4  # its pieces were all written before
    assert [line["content"] for line in read_transcripts(path)] == [
        m.content for m in (*said, *said[1:])
    ]


def test_texts_said_in_two_roles_keep_the_reader_within_the_writers_reach(
    tmp_path: Path,
) -> None:
    """The writer numbers a text anew in another role; the reader must count that number as
    the writer does, or its generations close earlier and a later reference finds nothing."""
    path = tmp_path / "transcripts.jsonl"
    [log] = _logs(path, "a1")
    half = GENERATION_MESSAGES // 2
    texts = [f"{n:>{SAME_MIN_CHARS}}" for n in range(2 * GENERATION_MESSAGES)]
    said: list[ChatMessage] = []
    for text in texts[:half]:
        said += (
            ChatMessage(role="user", content=text),
            ChatMessage(role="assistant", content=text),
        )
    said += [ChatMessage(role="user", content=text) for text in texts[half:-half]]
    log.write(1, CallPurpose.ROUND, *said)
    again = ChatMessage(role="assistant", content=texts[0])
    log.write(2, CallPurpose.ROUND, again)

    assert [(line["role"], line["content"]) for line in read_transcripts(path)] == [
        (message.role, message.content) for message in (*said, again)
    ]
