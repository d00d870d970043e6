"""Specs of session formats: a fixture per older format loads through the migration steps,
a newer format is refused naming both versions, and an older session is appended to without
rewriting a byte of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conclave.actors.session.entries import AssistantReply, RunRecorded, UserTurn
from conclave.actors.session.history import read_conversation
from conclave.actors.session.migrations import SESSION_VERSION, STEPS, SessionTooNew
from conclave.actors.session.store import open_session, read_session, session_path

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sessions"
OLD_VERSIONS = range(1, SESSION_VERSION)


def test_every_older_format_has_a_migration_step_and_a_fixture() -> None:
    assert sorted(STEPS) == list(OLD_VERSIONS)
    assert sorted(p.name for p in FIXTURES.glob("v*.jsonl")) == [
        f"v{v}.jsonl" for v in OLD_VERSIONS
    ]


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_a_session_of_an_older_format_loads_whole(version: int) -> None:
    path = FIXTURES / f"v{version}.jsonl"
    log = read_session(path)
    lines = [line for line in path.read_text().splitlines() if line]
    assert log.skipped == ()
    assert log.header.version == version
    assert len(log.entries) == len(lines) - 1
    conversation = read_conversation(log.entries)
    assert [e.user.text for e in conversation.exchanges] == [
        "What is a trio nursery?",
        "Plan a refactor",
    ]
    assert conversation.mode is not None and conversation.mode.active_agent == "scripted2"


def test_format_1_runs_and_replies_have_unknown_input_tokens() -> None:
    entries = read_session(FIXTURES / "v1.jsonl").entries
    answers = [e for e in entries if isinstance(e, RunRecorded | AssistantReply)]
    assert len(answers) == 2 and all(e.input_tokens is None for e in answers)


def test_a_session_newer_than_this_program_is_refused_naming_both_versions(
    tmp_path: Path,
) -> None:
    with open_session(tmp_path) as session:
        pass
    lines = session.path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = SESSION_VERSION + 1
    session.path.write_text(json.dumps(header) + "\n")
    with pytest.raises(SessionTooNew) as raised:
        read_session(session.path)
    message = str(raised.value)
    assert f"format {SESSION_VERSION + 1}" in message
    assert f"up to {SESSION_VERSION}" in message


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_appending_to_an_older_session_keeps_its_bytes_and_reads_back_whole(
    tmp_path: Path, version: int
) -> None:
    session_id = "old"
    path = session_path(tmp_path, session_id)
    path.parent.mkdir()
    shutil.copy(FIXTURES / f"v{version}.jsonl", path)
    before = path.read_bytes()
    with open_session(tmp_path, session_id) as session:
        turn = session.append(UserTurn(text="new turn"))
        reply = session.append(AssistantReply(turn_id=turn.id, text="ok", input_tokens=7))
    assert path.read_bytes().startswith(before)
    log = read_session(path)
    assert log.skipped == ()
    assert log.entries[-2:] == (turn, reply)
    assert len(log.entries) == len(before.splitlines()) - 1 + 2
