"""A round's transcript lives in the agent's memory, so a restarted agent goes on from it, and
every message of it is appended to the agent's transcript file: the full messages the model
saw and said, across rounds, those appended together on one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from conclave.actors.agent.events import AgentStatusChanged, RoundStarted, TranscriptFailed
from conclave.actors.agent.transcript_log import read_transcripts
from conclave.actors.coordination.bus import agent_address
from conclave.actors.coordination.protocol import AnswerView, Present
from conclave.actors.llm.protocol import ChatMessage
from conclave.config.schema import FinalAnswerStrategy
from tests.agent.harness import (
    AGENT,
    TASK,
    FakeBackend,
    SlowTools,
    answer,
    call,
    open_agent,
    transcript_entry,
    vote,
)
from tests.coordination.faults import CrashOnPoke, Poke


def _lines(path: Path) -> list[dict[str, Any]]:
    return list(read_transcripts(path))


async def test_every_message_the_model_saw_and_said_is_a_line_of_the_transcript_file(
    autojump_clock: object, tmp_path: Path
) -> None:
    path = tmp_path / "transcripts.jsonl"
    backend = FakeBackend([call("read", "r1", path="a.txt"), answer(call_id="c2")])
    async with open_agent(backend, tools=SlowTools(), transcript_path=path) as run:
        run.start()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    last = backend.requests[-1]
    said = answer(call_id="c2")
    assert _lines(path) == [transcript_entry(AGENT, 1, "round", m) for m in (*last.messages, said)]


async def _answer_then_vote(tmp_path: Path) -> Path:
    """An agent's answer round, then its vote round; its transcript file."""
    path = tmp_path / "transcripts.jsonl"
    backend = FakeBackend([answer(), vote()])
    async with open_agent(backend, transcript_path=path) as run:
        run.start()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")
        run.voting_open()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "voted")
    return path


async def test_the_transcript_file_is_appended_round_after_round(
    autojump_clock: object, tmp_path: Path
) -> None:
    path = await _answer_then_vote(tmp_path)

    rounds = [line["round"] for line in _lines(path)]
    assert rounds == [1] * 4 + [2] * 4  # system, task and answers, the agent's turn, reply; twice
    assert [line["role"] for line in _lines(path)][4:] == ["system", "user", "user", "assistant"]


async def test_a_rounds_prompt_is_one_line_of_the_transcript_file_and_the_reply_another(
    autojump_clock: object, tmp_path: Path
) -> None:
    path = await _answer_then_vote(tmp_path)

    _, *lines = [json.loads(raw) for raw in path.read_bytes().splitlines()]  # after the header
    batches = [(line["round"], len(line["messages"])) for line in lines]
    assert batches == [(1, 3), (1, 1), (2, 3), (2, 1)]


async def test_the_presentation_is_written_to_the_transcript_file_as_such(
    autojump_clock: object, tmp_path: Path
) -> None:
    path = tmp_path / "transcripts.jsonl"
    final = ChatMessage(role="assistant", content="The final answer.")
    present = Present(
        strategy=FinalAnswerStrategy.WINNER_PRESENT,
        task=TASK,
        own_label="agent1.1",
        answers=(AnswerView(label="agent1.1", content="A."),),
    )
    async with open_agent(FakeBackend([final]), transcript_path=path) as run:
        await run.system.ask(agent_address(AGENT), present)

    lines = _lines(path)
    assert [line["purpose"] for line in lines] == ["present"] * 3
    assert lines[-1]["content"] == "The final answer."


async def test_a_transcript_file_that_cannot_be_written_is_reported_once_and_the_round_goes_on(
    autojump_clock: object, tmp_path: Path
) -> None:
    (tmp_path / "transcripts.jsonl").mkdir()  # a directory where the file should be
    path = tmp_path / "transcripts.jsonl"
    async with open_agent(FakeBackend([answer()]), transcript_path=path) as run:
        run.start()
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    [failed] = run.tap.of_type(TranscriptFailed)
    assert failed.agent == AGENT
    assert str(path) in failed.error
    assert len(run.desk.submissions) == 1


async def test_a_restarted_agent_goes_on_from_the_rounds_transcript_without_redoing_its_tools(
    autojump_clock: object,
) -> None:
    # The reply at 1.0 calls a tool that reads until 3.0; the agent crashes at 3.5, while
    # its second call is in flight. Its successor asks again from the same transcript.
    tools = SlowTools(seconds=2.0)
    backend = FakeBackend([call("read", "r1", path="a.txt"), answer()])
    async with open_agent(backend, tools=tools, faults=CrashOnPoke()) as run:
        run.start()
        await trio.sleep(3.5)
        run.system.tell_nowait(agent_address(AGENT), Poke())
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    first, interrupted, resumed = backend.requests
    assert resumed.messages == interrupted.messages
    assert [m.role for m in resumed.messages[len(first.messages) :]] == ["assistant", "tool"]
    assert len(tools.calls) == 1
    assert len(run.tap.of_type(RoundStarted)) == 1
    assert len(run.desk.submissions) == 1
