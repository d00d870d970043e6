"""The run's working directory: workspaces, snapshots staged then published, final/."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.actors.workspace.layout import RunLayout, copy_tree


def _layout(tmp_path: Path) -> RunLayout:
    layout = RunLayout(tmp_path / "run")
    layout.create(["a1", "a2"])
    return layout


def test_every_agent_gets_its_own_workspace_under_workspaces(tmp_path: Path) -> None:
    layout = _layout(tmp_path)

    assert layout.workspace("a1") == (tmp_path / "run" / "workspaces" / "a1").resolve()
    assert layout.workspace("a1").is_dir()
    assert layout.workspace("a2").is_dir()


def test_a_published_answer_is_a_copy_of_its_workspace_under_its_label(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    (layout.workspace("a1") / "notes.txt").write_text("v1")

    layout.stage("a1")
    published = layout.publish("a1", "agent1.1")
    (layout.workspace("a1") / "notes.txt").write_text("v2")  # work goes on

    assert published == layout.snapshots / "agent1.1"
    assert (published / "notes.txt").read_text() == "v1"


def test_nothing_staged_publishes_nothing(tmp_path: Path) -> None:
    layout = _layout(tmp_path)

    assert layout.publish("a2", "agent2.1") is None
    assert not (layout.snapshots / "agent2.1").exists()


def test_publishing_the_same_answer_again_keeps_its_snapshot(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    layout.stage("a1")
    first = layout.publish("a1", "agent1.1")

    assert layout.publish("a1", "agent1.1") == first


def test_staging_again_replaces_the_older_copy_whole(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    (layout.workspace("a1") / "old.txt").write_text("x")
    layout.stage("a1")
    (layout.workspace("a1") / "old.txt").unlink()
    (layout.workspace("a1") / "new.txt").write_text("y")

    layout.stage("a1")

    assert sorted(p.name for p in layout.staging("a1").iterdir()) == ["new.txt"]


def test_a_copy_keeps_symlinks_as_links_and_never_follows_them(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("not to be copied")
    (source / "link").symlink_to(secret)

    copy_tree(source, tmp_path / "copy")

    assert (tmp_path / "copy" / "link").is_symlink()
    assert str((tmp_path / "copy" / "link").readlink()) == str(secret)


def test_a_failed_copy_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "final"
    target.mkdir()
    (target / "kept.txt").write_text("kept")

    with pytest.raises(FileNotFoundError):
        copy_tree(tmp_path / "missing", target)

    assert (target / "kept.txt").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]


def test_a_reused_workdir_keeps_workspaces_and_drops_the_earlier_runs_snapshots(
    tmp_path: Path,
) -> None:
    earlier = _layout(tmp_path)
    (earlier.workspace("a1") / "notes.txt").write_text("earlier work")
    earlier.stage("a1")
    earlier.publish("a1", "agent1.1")

    later = _layout(tmp_path)
    later.stage("a1")

    assert (later.workspace("a1") / "notes.txt").read_text() == "earlier work"
    assert later.publish("a1", "agent1.1") == later.snapshots / "agent1.1"


def test_a_resumed_runs_layout_is_seeded_with_copies_of_the_paused_runs(tmp_path: Path) -> None:
    paused = RunLayout(tmp_path / "paused")
    paused.create(["a1"])
    (paused.workspace("a1") / "notes.txt").write_text("work")
    paused.snapshot("agent1.1").mkdir()
    (paused.snapshot("agent1.1") / "notes.txt").write_text("answer")
    resumed = RunLayout(tmp_path / "paused" / "resumed-1")
    resumed.create(["a1", "a2"])

    copied = resumed.seed(paused, ["a1", "a2"], ["agent1.1", "agent2.1"])

    assert copied == {"agent1.1": resumed.snapshot("agent1.1")}  # a2 answered nothing
    assert (resumed.workspace("a1") / "notes.txt").read_text() == "work"
    assert (resumed.snapshot("agent1.1") / "notes.txt").read_text() == "answer"
    assert (paused.workspace("a1") / "notes.txt").read_text() == "work"
