"""The scripted backend streams a text reply as a model does: a few pieces spread over the
last part of the call's latency, which together are the reply; tool calls stream nothing,
and streaming does not change how long a call takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.coordination.workflow import NEW_ANSWER, VOTE
from conclave.actors.llm.protocol import CompletionRequest
from conclave.actors.llm.scripted import STREAM_CHUNKS, STREAMED_SHARE, ScriptedBackend
from conclave.actors.prompts.coordination import presentation_messages, round_messages
from conclave.config.schema import ScriptedBackendConfig
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, write_config

LATENCY = 0.2


class Heard:
    """A completion sink that keeps each text piece with the (virtual) time it came."""

    def __init__(self) -> None:
        self.pieces: list[tuple[float, str]] = []

    def text(self, delta: str) -> None:
        self.pieces.append((trio.current_time(), delta))

    def reasoning(self, delta: str) -> None:
        return None

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        return None

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        return None


def _backend(latency: float = LATENCY) -> ScriptedBackend:
    policy = ScriptedBackendConfig(seed=1, latency=latency)
    return ScriptedBackend(agent_id="agent-1", persona="", policy=policy)


def _presentation() -> CompletionRequest:
    answers = (AnswerView(label="agent1.1", content="a long enough answer to be streamed"),)
    messages = presentation_messages(
        me="agent1",
        strategy="winner_present",
        task="Name three uses of a paperclip",
        own_label="agent1.1",
        answers=answers,
        persona="",
    )
    return CompletionRequest(messages=tuple(messages))


async def test_a_text_reply_streams_in_a_few_pieces_that_make_up_the_reply(
    autojump_clock: object,
) -> None:
    heard = Heard()

    completion = await _backend().complete(_presentation(), sink=heard)

    assert len(heard.pieces) == STREAM_CHUNKS
    assert "".join(piece for _, piece in heard.pieces) == completion.message.content


async def test_the_pieces_come_over_the_last_part_of_the_latency_and_the_call_takes_it_all(
    autojump_clock: object,
) -> None:
    heard = Heard()
    started = trio.current_time()

    await _backend().complete(_presentation(), sink=heard)

    times = [at - started for at, _ in heard.pieces]
    assert times[0] == pytest.approx(LATENCY * (1 - STREAMED_SHARE))
    assert times == sorted(times) and len(set(times)) == len(times)
    assert trio.current_time() - started == pytest.approx(LATENCY)


async def test_a_reply_of_tool_calls_streams_no_text_and_takes_the_latency(
    autojump_clock: object,
) -> None:
    heard = Heard()
    messages = round_messages(
        me="agent1", agents=2, task="a task", answers=(), tools=["new_answer", "vote"], persona=""
    )
    request = CompletionRequest(messages=tuple(messages), tools=(NEW_ANSWER, VOTE))
    started = trio.current_time()

    completion = await _backend().complete(request, sink=heard)

    assert completion.message.tool_calls
    assert heard.pieces == []
    assert trio.current_time() - started == pytest.approx(LATENCY)


class Wakes(trio.abc.Instrument):
    """Counts how often trio schedules one task to run again."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.count = 0

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        self.count += task is self.task


async def test_a_reply_of_tool_calls_waits_out_its_latency_in_one_wait(
    autojump_clock: object,
) -> None:
    # Nothing streams, so the call need not wake when a first piece would be due.
    messages = round_messages(
        me="agent1", agents=2, task="a task", answers=(), tools=["new_answer", "vote"], persona=""
    )
    request = CompletionRequest(messages=tuple(messages), tools=(NEW_ANSWER, VOTE))
    wakes = Wakes(trio.lowlevel.current_task())
    trio.lowlevel.add_instrument(wakes)
    try:
        completion = await _backend().complete(request, sink=Heard())
    finally:
        trio.lowlevel.remove_instrument(wakes)

    assert completion.message.tool_calls
    assert wakes.count == 1


def test_include_partial_messages_shows_the_scripted_presentation_typing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "c.yaml", [{"id": "a", "latency": 0.2}, {"id": "b", "latency": 0.2}]
    )

    code = main(
        ["run", "--config", str(cfg), "--output-format", "stream-json",
         "--include-partial-messages", TASK]
    )  # fmt: skip

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == ExitCode.OK
    deltas = [line["text"] for line in lines if line["type"] == "text_delta"]
    assert len(deltas) >= 2  # more than one piece: it types, it does not appear at once
    # Text still buffered when the run ends is dropped (deltas are ephemeral; the answer is
    # whole in the result), so on a busy machine the deltas may be a prefix of it.
    assert lines[-1]["final_answer"].startswith("".join(deltas))
