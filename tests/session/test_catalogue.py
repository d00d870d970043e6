"""Specs of a directory's sessions: listing, the latest, pruning."""

from __future__ import annotations

import os
from pathlib import Path

from conclave.actors.session.catalogue import latest_session, list_sessions, prune_sessions
from conclave.actors.session.entries import UserTurn
from conclave.actors.session.store import open_session, session_path

DAY = 86_400.0


def _session(root: Path, *prompts: str, touched: float | None = None) -> str:
    with open_session(root) as session:
        for prompt in prompts:
            session.append(UserTurn(text=prompt))
    if touched is not None:
        os.utime(session.path, (touched, touched))
    return session.id


def test_sessions_are_listed_most_recently_used_first_with_first_prompt_and_turns(
    tmp_path: Path,
) -> None:
    old = _session(tmp_path, "first question", "second", touched=1_000.0)
    new = _session(tmp_path, "newer question", touched=2_000.0)
    listed = list_sessions(tmp_path)
    assert [s.id for s in listed] == [new, old]
    assert listed[1].first_prompt == "first question"
    assert listed[1].turns == 2


def test_an_unreadable_session_is_listed_with_its_problem(tmp_path: Path) -> None:
    path = session_path(tmp_path, "broken")
    path.parent.mkdir()
    path.write_text("not json\n")
    [summary] = list_sessions(tmp_path)
    assert summary.id == "broken" and "not a session" in (summary.problem or "")


def test_the_latest_session_is_the_one_written_to_last(tmp_path: Path) -> None:
    a = _session(tmp_path, "a", touched=3_000.0)
    _session(tmp_path, "b", touched=1_000.0)
    assert latest_session(tmp_path) == a


def test_the_latest_session_passes_over_a_newer_file_that_holds_no_session(
    tmp_path: Path,
) -> None:
    good = _session(tmp_path, "a", touched=1_000.0)
    for name, text in (("empty", ""), ("damaged", "not json\n")):
        path = session_path(tmp_path, name)
        path.parent.mkdir()
        path.write_text(text)
        os.utime(path, (2_000.0, 2_000.0))
    assert latest_session(tmp_path) == good


def test_the_latest_session_in_a_newer_format_is_not_passed_over(tmp_path: Path) -> None:
    _session(tmp_path, "a", touched=1_000.0)
    path = session_path(tmp_path, "newer")
    path.parent.mkdir()
    header = '{"kind":"session_header","id":0,"at":1.0,"version":99,"session_id":"newer","cwd":"/"}'
    path.write_text(header + "\n")
    assert latest_session(tmp_path) == "newer"  # resuming it says to upgrade


def test_no_directory_means_no_sessions(tmp_path: Path) -> None:
    assert latest_session(tmp_path / "none") is None
    assert list_sessions(tmp_path / "none") == []


def test_pruning_removes_sessions_unused_for_longer_than_the_retention(tmp_path: Path) -> None:
    now = 100 * DAY
    old = _session(tmp_path, "old", touched=now - 31 * DAY)
    kept = _session(tmp_path, "recent", touched=now - 29 * DAY)
    assert prune_sessions(tmp_path, retention_days=30, now=now) == [old]
    assert [s.id for s in list_sessions(tmp_path)] == [kept]


def test_pruning_keeps_a_session_that_is_open(tmp_path: Path) -> None:
    now = 100 * DAY
    with open_session(tmp_path) as session:
        os.utime(session.path, (1.0, 1.0))
        assert prune_sessions(tmp_path, retention_days=1, now=now) == []
    assert session.path.exists()
