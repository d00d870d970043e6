"""A run's transcript file is written while the run waits (``Flushing.WHEN_IDLE``), as its
event log is: a line is queued, trio's idle moments write the queue in one write, the queue
is bounded, closing writes the rest, and a failed batch reaches every agent whose lines it
held, once."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

import conclave.actors.agent.transcript_log
from conclave.actors.agent.transcript_log import TranscriptFile, TranscriptLog, read_transcripts
from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from conclave.runtime.eventlog import Flushing


def _file(path: Path) -> TranscriptFile:
    return TranscriptFile(path, flushing=Flushing.WHEN_IDLE)


def _say(log: TranscriptLog, content: str) -> None:
    log.write(1, CallPurpose.ROUND, ChatMessage(role="user", content=content))


def _contents(path: Path) -> list[str]:
    return [line["content"] for line in read_transcripts(path)]


async def test_a_line_is_not_written_while_trio_has_work_ready(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    file = _file(path)
    _say(TranscriptLog(file, agent="a1", on_failure=print), "one")

    await trio.lowlevel.checkpoint()  # a task is ready at once: trio does not wait

    assert not path.exists()
    file.close()


async def test_the_queued_lines_are_written_in_order_when_trio_waits(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    file = _file(path)
    first, second = (TranscriptLog(file, agent=a, on_failure=print) for a in ("a1", "a2"))
    _say(first, "one")
    _say(second, "two")
    _say(first, "three")

    await trio.sleep(0.01)  # real time: trio waits for it

    assert [(line["agent"], line["content"]) for line in read_transcripts(path)] == [
        ("a1", "one"),
        ("a2", "two"),
        ("a1", "three"),
    ]
    file.close()


async def test_the_files_of_several_runs_in_one_process_are_each_written_when_trio_waits(
    tmp_path: Path,
) -> None:
    paths = [tmp_path / f"run{i}" / "transcripts.jsonl" for i in range(3)]
    files = [_file(path) for path in paths]
    for i, file in enumerate(files[:2]):
        _say(TranscriptLog(file, agent="a1", on_failure=print), f"run {i}")

    await trio.sleep(0.01)

    assert [_contents(path) for path in paths[:2]] == [["run 0"], ["run 1"]]
    assert not paths[2].exists()
    for file in files:
        file.close()


async def test_a_full_queue_is_written_at_once_however_busy_trio_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.actors.agent.transcript_log, "MAX_PENDING_LINES", 2)
    path = tmp_path / "transcripts.jsonl"
    file = _file(path)
    log = TranscriptLog(file, agent="a1", on_failure=print)

    _say(log, "one")
    _say(log, "two")

    assert _contents(path) == ["one", "two"]
    file.close()


async def test_closing_the_file_writes_its_queue(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    file = _file(path)
    _say(TranscriptLog(file, agent="a1", on_failure=print), "one")

    file.close()

    assert _contents(path) == ["one"]


async def test_closing_an_agents_log_writes_the_files_queue(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    file = _file(path)
    log = TranscriptLog(file, agent="a1", on_failure=print)
    _say(log, "one")

    log.close()

    assert _contents(path) == ["one"]
    file.close()


async def test_a_closed_file_writes_each_later_line_at_once(tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    file = _file(path)
    log = TranscriptLog(file, agent="a1", on_failure=print)
    file.close()
    _say(log, "written at once")

    assert _contents(path) == ["written at once"]


async def test_a_failed_batch_reaches_each_agent_whose_lines_it_held_once_and_wakes_trio(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcripts.jsonl"
    path.mkdir()  # every write fails
    file = _file(path)
    failures: list[tuple[str, str]] = []
    reported = trio.Event()

    def hear(agent: str) -> TranscriptLog:
        def failed(error: str) -> None:
            failures.append((agent, error))
            reported.set()

        return TranscriptLog(file, agent=agent, on_failure=failed)

    first, second, silent = hear("a1"), hear("a2"), hear("a3")
    _say(first, "one")
    _say(second, "two")
    _say(first, "three")

    # Reported from inside trio's idle hook, the event would be set after trio decided how
    # long to wait: it would sleep out the whole deadline.
    started = trio.current_time()
    with trio.move_on_after(3):
        await reported.wait()
    assert trio.current_time() - started < 1.5
    await trio.sleep(0.01)
    _say(first, "four")

    assert sorted(agent for agent, _ in failures) == ["a1", "a2"]
    assert all(str(path) in error for _, error in failures)
    assert silent.failure is None
    file.close()
