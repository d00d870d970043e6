"""Long texts in transcripts.jsonl are written once, in pieces later lines refer to: an
answer quoted in every agent's prompt costs the file about its size once, and every line
reads back as it was said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conclave.actors.agent.transcript_log import (
    TranscriptError,
    TranscriptFile,
    TranscriptLog,
    read_transcripts,
)
from conclave.actors.agent.transcript_texts import (
    PIECES_KEY,
    TEXT_MIN_CHARS,
    PieceError,
    PieceReader,
    PieceWriter,
)
from conclave.actors.llm.protocol import CallPurpose, ChatMessage, ToolCall
from conclave.actors.run.driver import RunSpec, drive
from conclave.runtime.codec import json_line
from tests.coordination.helpers import TASK, agent, config

ANSWER = "".join(f"line {n} of a long answer, with some words to fill it\n" for n in range(16_000))
"""About 900 kB."""


def _written(lines: list[dict[str, Any]]) -> list[bytes]:
    writer = PieceWriter()
    return [json_line(writer.line(line)) for line in lines]


def _read(written: list[bytes]) -> list[dict[str, Any]]:
    reader = PieceReader()
    lines = []
    for raw in written:
        line = json.loads(raw)
        reader.resolve(line)
        lines.append(line)
    return lines


def test_a_text_quoted_again_inside_a_longer_message_is_written_once() -> None:
    prompt = f"<answers nonce>\n<agent1.1 nonce>\n{ANSWER}<end of agent1.1 nonce>\n</answers>\n"
    first, second, third = _written(
        [{"content": ANSWER}, {"content": prompt}, {"content": "Present it.\n" + prompt}]
    )

    assert len(first) > len(ANSWER)
    assert len(second) < len(ANSWER) / 200 and len(third) < len(ANSWER) / 200


def test_every_line_reads_back_as_it_was_written() -> None:
    lines: list[dict[str, Any]] = [
        {"content": ANSWER, "role": "assistant"},
        {"content": "short", "tool_calls": [{"id": "c", "arguments": "x" * 5000}]},
        {"content": f"before\n{ANSWER}after", "role": "user"},
    ]

    assert _read(_written(lines)) == lines


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["a" * 300 + "\n", "b\n", "ccc" * 200 + "\n", "d" * 2000]), max_size=30
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_texts_read_back_as_written(texts: list[list[str]]) -> None:
    lines = [{"content": "".join(parts), "n": i} for i, parts in enumerate(texts)]

    assert _read(_written(lines)) == lines


def test_a_reference_to_a_piece_no_line_wrote_is_an_error() -> None:
    line: dict[str, Any] = {"content": None, PIECES_KEY: {"/content": [7]}}

    with pytest.raises(PieceError, match="piece 7 at /content was not written by an earlier line"):
        PieceReader().resolve(line)


def _log(path: Path) -> TranscriptLog:
    return TranscriptLog(TranscriptFile(path), agent="a1", on_failure=lambda error: None)


def test_the_arguments_of_a_new_answer_share_the_pieces_of_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    log = _log(path)
    arguments = json.dumps({"content": ANSWER})  # spaced, as Python writes it
    call = ToolCall(id="c1", name="new_answer", arguments=arguments)
    log.write(1, CallPurpose.ROUND, ChatMessage(role="assistant", content="", tool_calls=(call,)))
    log.write(2, CallPurpose.ROUND, ChatMessage(role="user", content=f"<a>\n{ANSWER}</a>"))

    assert path.stat().st_size < len(ANSWER) + 64 * 1024
    said, shown = read_transcripts(path)
    assert said["tool_calls"] == [{"id": "c1", "name": "new_answer", "arguments": arguments}]
    assert shown["content"] == f"<a>\n{ANSWER}</a>"


def test_arguments_that_would_not_encode_back_exactly_are_written_as_sent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcripts.jsonl"
    arguments = '{ "content" :  ' + json.dumps(ANSWER) + "}"
    call = ToolCall(id="c1", name="new_answer", arguments=arguments)
    _log(path).write(1, CallPurpose.ROUND, ChatMessage(role="assistant", tool_calls=(call,)))

    [said] = read_transcripts(path)
    assert said["tool_calls"][0]["arguments"] == arguments


def test_a_text_just_long_enough_is_written_once_and_shorter_lines_as_they_are(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcripts.jsonl"
    log = _log(path)
    shortest = "é" * TEXT_MIN_CHARS  # two bytes a character: the line is twice as long
    # Said by another role, the text is not the same message: its pieces are referred to.
    log.write(1, CallPurpose.ROUND, ChatMessage(role="user", content=shortest))
    log.write(1, CallPurpose.ROUND, ChatMessage(role="assistant", content=shortest))
    for content in ("short", "short"):
        log.write(1, CallPurpose.ROUND, ChatMessage(role="user", content=content))

    lines = [json.loads(raw) for raw in path.read_bytes().splitlines()[1:]]  # after the header
    assert [PIECES_KEY in line for line in lines] == [True, True, False, False]
    assert len(json.dumps(lines[1])) < 200  # the second holds a reference, not the text
    assert [line["content"] for line in read_transcripts(path)] == [
        shortest,
        shortest,
        "short",
        "short",
    ]


def test_a_prompt_of_about_one_piece_is_written_whole(tmp_path: Path) -> None:
    """A big ring run's round prompt (1.1-1.5 kB: three short answers between the round's
    words) would be one piece, holding its start, which no other prompt repeats: cutting it
    costs time and bytes and saves nothing."""
    path = tmp_path / "transcripts.jsonl"
    log = _log(path)
    answer = "".join(
        f"{n}. an idea worth a line of its own, and a few more words\n" for n in range(7)
    )
    for me in ("agent1", "agent2"):
        prompt = f"<answers nonce>\n{answer * 3}</answers>\nYou are {me}. Answer or vote."
        assert 1024 < len(prompt) < TEXT_MIN_CHARS
        log.write(2, CallPurpose.ROUND, ChatMessage(role="user", content=prompt))

    lines = [json.loads(raw) for raw in path.read_bytes().splitlines()[1:]]
    assert [PIECES_KEY in line for line in lines] == [False, False]
    assert [line["content"].endswith("Answer or vote.") for line in read_transcripts(path)] == [
        True,
        True,
    ]


def test_reading_a_damaged_line_names_it(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    path.write_text('{"content": null, "pieces": {"/content": [3]}}\n')

    with pytest.raises(TranscriptError, match=r"transcripts.jsonl:1: piece 3 at /content"):
        list(read_transcripts(path))


async def test_a_1_mb_answer_seen_by_3_agents_costs_the_transcripts_about_1_mb(
    autojump_clock: object, tmp_path: Path
) -> None:
    members = [
        agent("a1", seed=1, answer_text=ANSWER, vote="agent1"),
        agent("a2", seed=2, vote="agent1"),
        agent("a3", seed=3, vote="agent1"),
    ]
    result = await drive(RunSpec(task=TASK, config=config(*members), log_dir=tmp_path))

    assert result.final_answer == ANSWER
    path = tmp_path / "transcripts.jsonl"
    # Written whole, the answer's 4 quotes in the prompts, the call and the presentation
    # made 6.9 times its size.
    assert path.stat().st_size < 1.3 * len(ANSWER)
    lines = list(read_transcripts(path))
    shown = [line for line in lines if line["role"] == "user" and ANSWER in line["content"]]
    assert {line["agent"] for line in shown} == {"a1", "a2", "a3"}
    assert lines[-1]["content"] == ANSWER
