"""Transcript files stay open between writes, but never more than a bounded number at once:
a run of thousands of agents must not run the process out of descriptors."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from conclave.actors.agent.transcript_log import (
    OPEN_LIMIT,
    TranscriptFile,
    TranscriptLog,
    read_transcripts,
)
from conclave.actors.llm.protocol import CallPurpose, ChatMessage


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _log(path: Path, failures: list[str]) -> TranscriptLog:
    return TranscriptLog(TranscriptFile(path), agent=path.stem, on_failure=failures.append)


def test_many_agents_writing_in_turn_keep_every_line_and_a_bounded_number_of_files_open(
    tmp_path: Path,
) -> None:
    failures: list[str] = []
    logs = [_log(tmp_path / "agents" / f"a{i}.jsonl", failures) for i in range(OPEN_LIMIT + 50)]
    before = _open_descriptors()
    for round_ in range(3):
        for log in logs:
            log.write(round_, CallPurpose.ROUND, ChatMessage(role="user", content=f"r{round_}"))
    assert _open_descriptors() - before <= OPEN_LIMIT
    for log in logs:
        log.close()
    for log in logs:
        assert [line["content"] for line in read_transcripts(log.path)] == ["r0", "r1", "r2"]
    assert failures == []


def test_the_agents_directory_is_made_when_the_first_transcript_is_written(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path / "run" / "agents" / "a.jsonl", [])
    log.write(1, CallPurpose.ROUND, ChatMessage(role="user", content="x"))
    assert log.path.is_file()


def test_a_closed_transcript_holds_no_descriptor_and_a_later_line_reopens_it(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path / "agents" / "a.jsonl", [])
    log.write(1, CallPurpose.ROUND, ChatMessage(role="user", content="one"))
    assert str(log.path) in _open_files()

    log.close()
    assert str(log.path) not in _open_files()

    log.write(2, CallPurpose.ROUND, ChatMessage(role="user", content="two"))
    assert [line["content"] for line in read_transcripts(log.path)] == ["one", "two"]
    log.close()


def _open_files() -> set[str]:
    """The paths this process holds open (a descriptor closed while listing is skipped)."""
    paths = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            paths.add(os.readlink(f"/proc/self/fd/{fd}"))
    return paths


def test_a_failed_write_stops_the_file_for_every_agent_and_each_reports_it(
    tmp_path: Path,
) -> None:
    # A later line could refer to a piece the failed line defined: no agent writes after it.
    path = tmp_path / "transcripts.jsonl"
    path.mkdir()  # the first write fails
    file = TranscriptFile(path)
    failures: list[str] = []
    first, second = (
        TranscriptLog(file, agent=name, on_failure=failures.append) for name in ("a1", "a2")
    )
    first.write(1, CallPurpose.ROUND, ChatMessage(role="user", content="one"))
    path.rmdir()  # a write would succeed now

    second.write(1, CallPurpose.ROUND, ChatMessage(role="user", content="two"))
    second.write(2, CallPurpose.ROUND, ChatMessage(role="user", content="three"))

    assert not path.exists()
    assert len(failures) == 2 and failures[0] == failures[1]
    assert str(path) in failures[0]
