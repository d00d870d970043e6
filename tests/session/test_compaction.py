"""Specs of compaction: older exchanges summarised by a model call into one entry, the latest
kept verbatim, and the next run's prompts smaller for it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.events import EventHub
from conclave.actors.llm.protocol import (
    CallPurpose,
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
)
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.actors.run.driver import RunSpec, drive
from conclave.actors.run.termination import Termination
from conclave.actors.session.compaction import (
    CompactionFailed,
    CompactionPolicy,
    compact,
    due,
    summary_request,
)
from conclave.actors.session.entries import Compacted, CompactionTrigger, RunRecorded
from conclave.actors.session.history import SUMMARY_QUESTION
from conclave.actors.session.recorder import SessionRecorder
from conclave.actors.session.store import Session, open_session, read_session
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig

Maker = Callable[[int], SessionRecorder]
LONG = "lorem ipsum dolor sit amet " * 80  # ~2,000 characters: an answer worth compacting


def _backend() -> ScriptedBackend:
    return ScriptedBackend(agent_id="s", persona="", policy=ScriptedBackendConfig(latency=0.0))


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[Callable[[int], SessionRecorder]]:
    """Makes a session of ``n`` answered exchanges; every one is closed after the spec."""
    with contextlib.ExitStack() as stack:
        yield lambda n: _recorded(stack.enter_context(open_session(tmp_path)), n)


def _recorded(session: Session, exchanges: int) -> SessionRecorder:
    recorder = SessionRecorder(session)
    for i in range(exchanges):
        turn = recorder.user_turn(f"question {i}")
        recorder.session.append(
            RunRecorded(
                turn_id=turn.id,
                run_id=f"r{i}",
                log_dir=None,
                termination=Termination.COMPLETED,
                winner="a",
                final_answer=f"answer {i}: {LONG}",
                input_tokens=1_000 * (i + 1),
            )
        )
    return SessionRecorder(recorder.session)  # re-read: the fold sees the runs


async def test_compaction_appends_one_entry_and_keeps_the_latest_exchanges_verbatim(
    sessions: Maker,
) -> None:
    recorder = sessions(5)
    entry = await compact(recorder, _backend(), preserve_recent=2, trigger=CompactionTrigger.MANUAL)
    assert isinstance(entry, Compacted)
    assert read_session(recorder.session.path).entries[-1] == entry
    history = recorder.conversation.history()
    assert history[0].task == SUMMARY_QUESTION and history[0].final_answer == entry.summary
    assert [t.task for t in history[1:]] == ["question 3", "question 4"]
    assert history[2].final_answer == f"answer 4: {LONG}"
    assert entry.first_kept_id == recorder.conversation.exchanges[3].user.id


async def test_the_summary_is_the_models_and_names_the_older_exchanges(sessions: Maker) -> None:
    recorder = sessions(3)
    entry = await compact(recorder, _backend(), preserve_recent=1, trigger=CompactionTrigger.MANUAL)
    assert entry is not None
    assert "question 0" in entry.summary and "question 1" in entry.summary
    assert "question 2" not in entry.summary


async def test_compaction_reports_fewer_tokens_after_than_before(sessions: Maker) -> None:
    recorder = sessions(6)
    entry = await compact(
        recorder, _backend(), preserve_recent=2, trigger=CompactionTrigger.AUTOMATIC
    )
    assert entry is not None
    assert entry.tokens_after < entry.tokens_before / 2


async def test_instructions_reach_the_summary_request(sessions: Maker) -> None:
    recorder = sessions(3)
    entry = await compact(
        recorder,
        _backend(),
        preserve_recent=1,
        trigger=CompactionTrigger.MANUAL,
        instructions="the  file names",
    )
    assert entry is not None and entry.instructions == "the  file names"
    assert "Focus on: the file names" in entry.summary


async def test_nothing_older_than_the_kept_exchanges_means_no_compaction(sessions: Maker) -> None:
    recorder = sessions(2)
    before = len(recorder.session.entries)
    assert (
        await compact(recorder, _backend(), preserve_recent=2, trigger=CompactionTrigger.MANUAL)
        is None
    )
    assert len(recorder.session.entries) == before


async def test_a_second_compaction_summarises_the_first_summary_too(sessions: Maker) -> None:
    recorder = sessions(4)
    await compact(recorder, _backend(), preserve_recent=1, trigger=CompactionTrigger.MANUAL)
    request = summary_request(recorder.conversation.compaction.summary, ())  # type: ignore[union-attr]
    assert request.messages[1].content == SUMMARY_QUESTION
    assert request.purpose is CallPurpose.COMPACT


async def test_a_cancelled_compaction_leaves_the_session_as_it_was(
    sessions: Maker, autojump_clock: object
) -> None:
    recorder = sessions(4)
    slow = ScriptedBackend(agent_id="s", persona="", policy=ScriptedBackendConfig(latency=10.0))
    before = recorder.session.path.read_bytes()
    with trio.move_on_after(1.0):
        await compact(recorder, slow, preserve_recent=1, trigger=CompactionTrigger.MANUAL)
    assert recorder.session.path.read_bytes() == before


class _Silent:
    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        return Completion(message=ChatMessage(role="assistant", content="  "))


async def test_an_empty_summary_fails_and_changes_nothing(sessions: Maker) -> None:
    recorder = sessions(3)
    before = recorder.session.path.read_bytes()
    with pytest.raises(CompactionFailed):
        await compact(recorder, _Silent(), preserve_recent=1, trigger=CompactionTrigger.MANUAL)
    assert recorder.session.path.read_bytes() == before


def test_compaction_is_due_once_the_last_calls_input_tokens_pass_the_threshold(
    sessions: Maker,
) -> None:
    recorder = sessions(3)  # the last run reported 3,000 input tokens
    conversation = recorder.conversation
    assert due(conversation, CompactionPolicy(threshold_tokens=2_999, preserve_recent=1))
    assert not due(conversation, CompactionPolicy(threshold_tokens=3_000, preserve_recent=1))
    assert not due(
        conversation, CompactionPolicy(enabled=False, threshold_tokens=1, preserve_recent=1)
    )
    assert not due(conversation, CompactionPolicy(threshold_tokens=1, preserve_recent=3))


async def _largest_prompt(history: tuple[object, ...]) -> int:
    """The largest input tokens any call of a two-agent scripted run reports."""
    agents = tuple(
        AgentConfig(id=f"a{i}", backend=ScriptedBackendConfig(seed=i, latency=0.0))
        for i in range(2)
    )
    spec = RunSpec(task="next question", config=ConclaveConfig(agents=agents), history=history)  # type: ignore[arg-type]
    seen: list[int] = []
    with EventHub() as hub:
        hub.subscribe_sync(lambda e: seen.append(e.input_tokens), (LlmRequestFinished,))
        result = await drive(spec, hub)
    assert result.termination is Termination.COMPLETED
    return max(seen)


async def test_compaction_cuts_the_next_runs_input_tokens(sessions: Maker) -> None:
    recorder = sessions(8)
    before = await _largest_prompt(recorder.conversation.history())
    await compact(recorder, _backend(), preserve_recent=2, trigger=CompactionTrigger.MANUAL)
    after = await _largest_prompt(recorder.conversation.history())
    print(f"next run's largest prompt: {before} input tokens before, {after} after")
    assert after < before / 2
