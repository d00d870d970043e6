"""What counts as written under the writable context paths, and the footer that says so."""

from __future__ import annotations

import os
from pathlib import Path

from conclave.actors.workspace.writes import (
    FOOTER_LIMIT,
    Writes,
    diff,
    footer,
    mtime_snapshot,
    write_list,
)


def _touch_later(path: Path, text: str) -> None:
    """Write ``path`` with an mtime surely newer than any it had (coarse clocks tick)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def test_a_file_absent_from_the_baseline_is_new(tmp_path: Path) -> None:
    before = mtime_snapshot([tmp_path])
    (tmp_path / "made.txt").write_text("x")

    assert diff(before, mtime_snapshot([tmp_path])) == Writes(new=(str(tmp_path / "made.txt"),))


def test_a_file_with_a_newer_mtime_is_modified(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    before = mtime_snapshot([tmp_path])
    _touch_later(kept, "new")

    assert diff(before, mtime_snapshot([tmp_path])) == Writes(modified=(str(kept),))


def test_an_untouched_file_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("old")
    before = mtime_snapshot([tmp_path])

    assert diff(before, mtime_snapshot([tmp_path])) == Writes()


def test_the_snapshot_holds_paths_and_mtimes_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    made = tmp_path / "sub" / "f.txt"
    made.write_text("content is never read")

    snapshot = mtime_snapshot([tmp_path])

    assert snapshot == {str(made): made.stat().st_mtime_ns}


def test_skipped_directories_are_not_walked(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.jsonl").write_text("{}")
    (tmp_path / "mine.txt").write_text("x")

    assert set(mtime_snapshot([tmp_path], skip=[tmp_path / "run"])) == {str(tmp_path / "mine.txt")}


def test_symlinked_directories_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.txt").write_text("x")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)

    assert mtime_snapshot([root]) == {}


def test_a_context_path_that_is_a_file_is_tracked_itself(tmp_path: Path) -> None:
    single = tmp_path / "notes.md"
    single.write_text("x")

    assert set(mtime_snapshot([single])) == {str(single)}


def test_no_footer_when_nothing_was_written() -> None:
    assert footer(Writes(), Path("/log/context_path_writes.txt")) is None


def test_up_to_five_files_are_listed_under_the_heading() -> None:
    writes = Writes(new=tuple(f"/ctx/n{i}" for i in range(3)), modified=("/ctx/m1", "/ctx/m2"))

    text = footer(writes, Path("/log/context_path_writes.txt"))

    assert text == "\n".join(
        ["Files written to context paths:", *(f"  {p}" for p in writes.paths())]
    )
    assert writes.count == FOOTER_LIMIT


def test_more_than_five_files_are_counted_and_the_list_file_named() -> None:
    writes = Writes(new=tuple(f"/ctx/n{i}" for i in range(6)))

    text = footer(writes, Path("/log/context_path_writes.txt"))

    assert text is not None
    assert text.startswith("6 files written to context paths")
    assert "/log/context_path_writes.txt" in text
    assert "/ctx/n0" not in text


def test_the_list_file_holds_every_written_path_one_a_line(tmp_path: Path) -> None:
    writes = Writes(new=("/ctx/b", "/ctx/a"), modified=("/ctx/c",))

    write_list(writes, tmp_path / "list.txt")

    assert (tmp_path / "list.txt").read_text().splitlines() == ["/ctx/a", "/ctx/b", "/ctx/c"]
