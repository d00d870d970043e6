"""What counts as changed under the writable context paths (by content, not by time), the
footer that says so, the list file and the diff file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conclave.actors.workspace import file_index
from conclave.actors.workspace.file_index import KEEP_FILE_BYTES, FileIndex, index_files
from conclave.actors.workspace.write_diff import diff_text
from conclave.actors.workspace.writes import (
    FOOTER_LIMIT,
    PathWrite,
    WriteKind,
    Writes,
    diff,
    footer,
    write_list,
)


def _changes(root: Path, before: FileIndex) -> Writes:
    return diff(before, index_files([root], previous=before))


# what changed


def test_a_file_absent_from_the_baseline_is_new(tmp_path: Path) -> None:
    before = index_files([tmp_path], keep=True)
    (tmp_path / "made.txt").write_text("x")

    assert _changes(tmp_path, before) == Writes.of(new=[str(tmp_path / "made.txt")])


def test_a_file_whose_content_changed_is_modified(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    before = index_files([tmp_path], keep=True)
    kept.write_text("new")

    assert _changes(tmp_path, before) == Writes.of(modified=[str(kept)])


def test_a_change_with_the_mtime_set_back_is_modified(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    stamp = kept.stat()
    before = index_files([tmp_path], keep=True)
    kept.write_text("new")
    os.utime(kept, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))

    assert _changes(tmp_path, before) == Writes.of(modified=[str(kept)])


def test_a_file_rewritten_with_the_same_content_is_not_reported(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("same")
    before = index_files([tmp_path], keep=True)
    kept.write_text("same")
    os.utime(kept, ns=(1, 1))

    assert _changes(tmp_path, before) == Writes()


def test_a_deleted_file_is_deleted(tmp_path: Path) -> None:
    gone = tmp_path / "gone.txt"
    gone.write_text("the user's")
    before = index_files([tmp_path], keep=True)
    gone.unlink()

    assert _changes(tmp_path, before) == Writes.of(deleted=[str(gone)])


def test_a_moved_file_is_renamed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    old = tmp_path / "a.txt"
    old.write_text("content")
    before = index_files([tmp_path], keep=True)
    old.rename(tmp_path / "sub" / "b.txt")

    assert _changes(tmp_path, before) == Writes(
        files=(
            PathWrite(
                path=str(tmp_path / "sub" / "b.txt"),
                kind=WriteKind.RENAMED,
                renamed_from=str(old),
            ),
        )
    )


def test_a_file_moved_and_changed_is_deleted_and_new(tmp_path: Path) -> None:
    old = tmp_path / "a.txt"
    old.write_text("content")
    before = index_files([tmp_path], keep=True)
    old.rename(tmp_path / "b.txt")
    (tmp_path / "b.txt").write_text("changed")

    assert _changes(tmp_path, before) == Writes.of(
        deleted=[str(old)], new=[str(tmp_path / "b.txt")]
    )


def test_an_untouched_file_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("old")
    before = index_files([tmp_path], keep=True)

    assert _changes(tmp_path, before) == Writes()


def test_the_second_index_reads_only_the_files_whose_stat_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(name)
    before = index_files([tmp_path], keep=True)
    (tmp_path / "b").write_text("B")
    read: list[str] = []
    real = file_index._read

    def counting(path: str, *, keep: bool) -> object:
        read.append(path)
        return real(path, keep=keep)

    monkeypatch.setattr(file_index, "_read", counting)

    assert _changes(tmp_path, before) == Writes.of(modified=[str(tmp_path / "b")])
    assert read == [str(tmp_path / "b")]


def test_an_unreadable_file_is_tracked_by_its_stat_not_taken_for_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked"
    locked.write_text("x")

    def refused(path: str, *, keep: bool) -> object:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(file_index, "_read", refused)
    before = index_files([tmp_path], keep=True)
    unchanged = index_files([tmp_path], previous=before)
    locked.write_text("y")
    after = index_files([tmp_path], previous=before)

    assert diff(before, unchanged) == Writes()
    assert diff(before, after) == Writes.of(modified=[str(locked)])


def test_skipped_directories_are_not_walked(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.jsonl").write_text("{}")
    (tmp_path / "mine.txt").write_text("x")

    index = index_files([tmp_path], skip=[tmp_path / "run"])

    assert set(index.files) == {str(tmp_path / "mine.txt")}


def test_symlinked_directories_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.txt").write_text("x")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)

    assert index_files([root]).files == {}


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")

    assert index_files([tmp_path]).files == {}


def test_a_context_path_that_is_a_file_is_tracked_itself(tmp_path: Path) -> None:
    single = tmp_path / "notes.md"
    single.write_text("x")
    before = index_files([single], keep=True)
    single.unlink()

    assert set(before.files) == {str(single)}
    assert _changes(single, before) == Writes.of(deleted=[str(single)])


def test_only_small_text_files_are_kept_for_the_diff(tmp_path: Path) -> None:
    (tmp_path / "text.txt").write_text("words")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    (tmp_path / "huge.txt").write_text("x" * (KEEP_FILE_BYTES + 1))

    index = index_files([tmp_path], keep=True)

    assert index.kept == {str(tmp_path / "text.txt"): b"words"}


def test_kept_content_stops_at_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_index, "KEEP_BUDGET", 10)
    (tmp_path / "a.txt").write_text("123456")
    (tmp_path / "b.txt").write_text("123456")

    index = index_files([tmp_path], keep=True)

    assert len(index.kept) == 1
    assert len(index.files) == 2


# the footer and the list


def test_no_footer_when_nothing_was_written() -> None:
    assert footer(Writes(), Path("/log/context_path_writes.txt")) is None


def test_up_to_five_files_are_listed_with_what_happened_to_each() -> None:
    writes = Writes.of(
        new=["/ctx/n1", "/ctx/n2"],
        modified=["/ctx/m1"],
        deleted=["/ctx/d1"],
        renamed=[("/ctx/r0", "/ctx/r1")],
    )

    text = footer(writes, Path("/log/list.txt"), Path("/log/writes.diff"))

    assert text == "\n".join(
        [
            "Files changed in context paths; the diff is in /log/writes.diff:",
            "  deleted   /ctx/d1",
            "  modified  /ctx/m1",
            "  new       /ctx/n1",
            "  new       /ctx/n2",
            "  renamed   /ctx/r0 -> /ctx/r1",
        ]
    )
    assert writes.count == FOOTER_LIMIT


def test_a_run_that_only_deleted_shows_a_footer() -> None:
    text = footer(Writes.of(deleted=["/ctx/users.txt"]), None)

    assert text == "Files changed in context paths:\n  deleted   /ctx/users.txt"


def test_more_than_five_files_are_counted_by_kind_and_the_files_named() -> None:
    writes = Writes.of(new=[f"/ctx/n{i}" for i in range(4)], deleted=["/ctx/d1", "/ctx/d2"])

    text = footer(writes, Path("/log/list.txt"), Path("/log/writes.diff"))

    assert text == (
        "6 files changed in context paths (4 new, 2 deleted); the full list is in "
        "/log/list.txt; the diff is in /log/writes.diff"
    )


def test_the_list_file_holds_each_path_with_its_kind(tmp_path: Path) -> None:
    writes = Writes.of(new=["/ctx/b"], modified=["/ctx/a"], renamed=[("/ctx/c", "/ctx/d")])

    write_list(writes, tmp_path / "list.txt")

    assert (tmp_path / "list.txt").read_text().splitlines() == [
        "modified\t/ctx/a",
        "new\t/ctx/b",
        "renamed\t/ctx/c\t/ctx/d",
    ]


# the diff


def test_a_modified_file_diffs_with_single_slash_headers(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\ntwo\n")
    before = index_files([tmp_path], keep=True)
    notes.write_text("one\n2\n")

    text = diff_text(_changes(tmp_path, before), before)

    shown = str(notes).lstrip("/")
    assert text == f"--- a/{shown}\n+++ b/{shown}\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    assert "//" not in text


def test_a_new_file_diffs_from_dev_null(tmp_path: Path) -> None:
    before = index_files([tmp_path], keep=True)
    (tmp_path / "made.txt").write_text("hi")

    text = diff_text(_changes(tmp_path, before), before)

    shown = str(tmp_path / "made.txt").lstrip("/")
    assert text == (
        f"--- /dev/null\n+++ b/{shown}\n@@ -0,0 +1 @@\n+hi\n\\ No newline at end of file\n"
    )


def test_a_deleted_file_diffs_to_dev_null(tmp_path: Path) -> None:
    gone = tmp_path / "gone.txt"
    gone.write_text("bye\n")
    before = index_files([tmp_path], keep=True)
    gone.unlink()

    text = diff_text(_changes(tmp_path, before), before)

    assert text == f"--- a/{str(gone).lstrip('/')}\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"


def test_a_binary_change_is_summarised(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00one")
    before = index_files([tmp_path], keep=True)
    blob.write_bytes(b"\x00two")

    text = diff_text(_changes(tmp_path, before), before)

    shown = str(blob).lstrip("/")
    assert text == f"Binary files a/{shown} and b/{shown} differ\n"


def test_a_huge_change_is_summarised(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text("a" * (KEEP_FILE_BYTES + 1))
    before = index_files([tmp_path], keep=True)
    big.write_text("b" * (KEEP_FILE_BYTES + 1))

    text = diff_text(_changes(tmp_path, before), before)

    assert text.endswith(f"differ (too large to show: over {KEEP_FILE_BYTES:,} bytes)\n")


def test_a_rename_is_a_git_rename_header(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    before = index_files([tmp_path], keep=True)
    (tmp_path / "a.txt").rename(tmp_path / "b.txt")

    text = diff_text(_changes(tmp_path, before), before)

    was, now = f"{str(tmp_path).lstrip('/')}/a.txt", f"{str(tmp_path).lstrip('/')}/b.txt"
    assert text == (
        f"diff --git a/{was} b/{now}\nsimilarity index 100%\nrename from {was}\nrename to {now}\n"
    )


@pytest.mark.parametrize(
    "undo",
    [["git", "apply", "-R", "-p1", "-"], ["patch", "-R", "-p1", "-s"]],
    ids=["git-apply", "patch"],
)
def test_a_rename_in_the_diff_is_undone_by_git_apply_and_patch(
    tmp_path: Path, undo: list[str]
) -> None:
    (tmp_path / "a.txt").write_text("x")
    before = index_files([tmp_path], keep=True)
    (tmp_path / "a.txt").rename(tmp_path / "b.txt")
    text = diff_text(_changes(tmp_path, before), before)

    subprocess.run(undo, input=text, text=True, cwd="/", check=True)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
