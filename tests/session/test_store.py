"""Specs of the session store: append-only JSONL through the codec, cut-off lines skipped
and reported, one writer at a time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conclave.actors.run.termination import Termination
from conclave.actors.session.entries import (
    ModeChanged,
    RunRecorded,
    SessionHeader,
    UserTurn,
)
from conclave.actors.session.store import (
    SESSION_FILE,
    Session,
    SessionBusy,
    SessionError,
    SessionNotFound,
    SessionUnreadable,
    find_session,
    open_session,
    read_session,
    session_path,
)
from conclave.config.modes import ModeSource, ModeState
from conclave.config.schema.modes import AgentMode, CollaborationMode
from conclave.runtime.codec import encode


def _clock() -> float:
    return 1_800_000_000.0


def test_a_new_session_starts_with_a_header_naming_its_format_and_directory(
    tmp_path: Path,
) -> None:
    with open_session(tmp_path, cwd=Path("/somewhere"), clock=_clock) as session:
        pass
    first = json.loads(session_path(tmp_path, session.id).read_text().splitlines()[0])
    assert first["kind"] == "session_header"
    assert first["session_id"] == session.id
    assert first["cwd"] == "/somewhere"
    assert first["version"] >= 1


def test_each_entry_is_one_line_written_by_the_codec_numbered_and_timestamped(
    tmp_path: Path,
) -> None:
    with open_session(tmp_path, clock=_clock) as session:
        turn = session.append(UserTurn(text="two\nlines"))
        lines = session_path(tmp_path, session.id).read_bytes().splitlines()
    assert turn.id == 1 and turn.at == _clock()
    assert json.loads(lines[1]) == encode(turn)
    assert len(lines) == 2


def test_an_appended_entry_is_on_disk_before_append_returns(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        session.append(UserTurn(text="first"))
        on_disk = read_session(session.path)  # read while still open: nothing is buffered
    assert [e.text for e in on_disk.entries if isinstance(e, UserTurn)] == ["first"]


def test_reading_returns_every_entry_as_its_type(tmp_path: Path) -> None:
    state = ModeState(
        collaboration=CollaborationMode.PLAN,
        agent_mode=AgentMode.SINGLE,
        active_agent="b",
        refinement=False,
    )
    with open_session(tmp_path) as session:
        turn = session.append(UserTurn(text="task"))
        run = session.append(
            RunRecorded(
                turn_id=turn.id,
                run_id="r1",
                log_dir="/logs/r1",
                termination=Termination.COMPLETED,
                winner="a",
                final_answer="answer",
                input_tokens=1234,
            )
        )
        mode = session.append(ModeChanged.of(state, ModeSource.SHORTCUT))
    log = read_session(session.path)
    assert log.entries == (turn, run, mode)
    assert mode.state == state
    assert isinstance(log.header, SessionHeader)


def test_reopening_appends_after_the_last_entry_without_rewriting(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        session.append(UserTurn(text="one"))
    before = session.path.read_bytes()
    with open_session(tmp_path, session.id) as again:
        added = again.append(UserTurn(text="two"))
    assert added.id == 2
    assert again.resumed
    assert session.path.read_bytes().startswith(before)


def test_a_cut_off_last_line_is_skipped_and_reported_not_fatal(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        session.append(UserTurn(text="whole"))
    with session.path.open("ab") as file:
        file.write(b'{"kind":"session_user_turn","id":2,"at":1.0,"te')  # SIGKILL mid-write
    log = read_session(session.path)
    assert [e.text for e in log.entries if isinstance(e, UserTurn)] == ["whole"]
    [skipped] = log.skipped
    assert skipped.cut_off and skipped.line == 3
    assert "cut off" in (log.problems() or "")


def test_appending_after_a_cut_off_line_starts_a_new_whole_line(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        session.append(UserTurn(text="whole"))
    with session.path.open("ab") as file:
        file.write(b'{"kind":"session_user_turn","id":2,')
    with open_session(tmp_path, session.id) as again:
        again.append(UserTurn(text="after"))
    log = read_session(session.path)
    assert [e.text for e in log.entries if isinstance(e, UserTurn)] == ["whole", "after"]
    assert len(log.skipped) == 1 and not log.skipped[0].cut_off


def test_a_damaged_line_in_the_middle_is_skipped_and_named(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        session.append(UserTurn(text="one"))
    with session.path.open("ab") as file:
        file.write(b'{"kind":"no_such_entry","id":2,"at":1.0}\n')
    with open_session(tmp_path, session.id) as again:
        again.append(UserTurn(text="three"))
    log = read_session(session.path)
    assert [e.text for e in log.entries if isinstance(e, UserTurn)] == ["one", "three"]
    assert "no_such_entry" in log.skipped[0].reason


def test_a_second_writer_of_one_session_is_refused(tmp_path: Path) -> None:
    with (
        open_session(tmp_path) as session,
        pytest.raises(SessionBusy, match="open in another Conclave"),
        open_session(tmp_path, session.id),
    ):
        pass


def test_a_file_without_a_header_is_not_a_session(tmp_path: Path) -> None:
    path = session_path(tmp_path, "x")
    path.parent.mkdir()
    path.write_text('{"kind":"session_user_turn","id":1,"at":1.0,"text":"hi"}\n')
    with pytest.raises(SessionUnreadable, match="session_header"):
        read_session(path)


def test_an_empty_file_is_reported_as_never_written(tmp_path: Path) -> None:
    path = session_path(tmp_path, "x")
    path.parent.mkdir()
    path.write_bytes(b"")
    with pytest.raises(SessionUnreadable, match="never written"):
        read_session(path)


def test_a_file_that_holds_no_session_says_what_to_do(tmp_path: Path) -> None:
    path = session_path(tmp_path, "x")
    path.parent.mkdir()
    path.write_text("not json\n")
    with pytest.raises(SessionUnreadable, match="cannot be resumed: remove its directory"):
        read_session(path)


def test_a_session_whose_header_cannot_be_written_leaves_no_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(self: Session, line: bytes) -> None:
        raise SessionError("cannot append: No space left on device")

    monkeypatch.setattr(Session, "_write", full_disk)
    with pytest.raises(SessionError, match="No space left"), open_session(tmp_path):
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_session_is_found_by_a_unique_prefix_of_its_id(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        pass
    assert find_session(tmp_path, session.id[:-2]) == session.id


def test_an_unknown_session_id_is_refused_with_where_to_look(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFound, match="conclave sessions"):
        find_session(tmp_path, "nope")
    with pytest.raises(SessionNotFound, match="not a session id"):
        find_session(tmp_path, "../etc")


def test_a_session_file_is_private_to_its_owner(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        pass
    assert os.stat(tmp_path / session.id / SESSION_FILE).st_mode & 0o077 == 0
