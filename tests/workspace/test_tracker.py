"""The WriteTracker actor: a baseline once, a diff after the writing, the writes kept in
run-owned state (a restarted tracker and the run's result read them)."""

from __future__ import annotations

import os
from pathlib import Path

from conclave.actors.workspace.events import ContextPathsChanged
from conclave.actors.workspace.tracker import (
    TRACKER,
    DiffWrites,
    TakeBaseline,
    TrackerState,
    WritesFound,
    WriteTracker,
)
from conclave.actors.workspace.write_diff import DIFF_FILE
from conclave.actors.workspace.writes import WRITES_FILE, PathWrite, WriteKind, Writes
from conclave.config.schema.context import ContextPath, ContextPermission
from conclave.runtime import MemoryTap, open_actor_system


def _state(tmp_path: Path, **fields: object) -> TrackerState:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    context = ContextPath(path=ctx, permission=ContextPermission.WRITE, **fields)
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    return TrackerState(context_paths=(context,), list_dir=log)


async def _ask(state: TrackerState, *requests: TakeBaseline | DiffWrites) -> MemoryTap:
    tap = MemoryTap()
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(TRACKER, lambda ctx: WriteTracker(ctx, state=state))
        for request in requests:
            await system.ask(TRACKER, request)
    return tap


async def test_a_file_made_after_the_baseline_is_reported_new(tmp_path: Path) -> None:
    state = _state(tmp_path)
    (tmp_path / "ctx" / "old.txt").write_text("x")
    await _ask(state, TakeBaseline())
    (tmp_path / "ctx" / "new.txt").write_text("y")

    tap = await _ask(state, DiffWrites())

    made = str(tmp_path / "ctx" / "new.txt")
    assert state.writes == Writes.of(new=[made])
    (event,) = tap.of_type(ContextPathsChanged)
    assert event.files == (PathWrite(path=made, kind=WriteKind.NEW),)


async def test_the_first_baseline_stands(tmp_path: Path) -> None:
    state = _state(tmp_path)
    await _ask(state, TakeBaseline())
    (tmp_path / "ctx" / "between.txt").write_text("written by a first presentation")

    await _ask(state, TakeBaseline(), DiffWrites())

    assert state.writes == Writes.of(new=[str(tmp_path / "ctx" / "between.txt")])


async def test_the_diff_replies_with_the_writes(tmp_path: Path) -> None:
    state = _state(tmp_path)
    kept = tmp_path / "ctx" / "kept.txt"
    kept.write_text("x")
    await _ask(state, TakeBaseline())
    kept.write_text("y")
    async with open_actor_system() as system:
        system.spawn(TRACKER, lambda ctx: WriteTracker(ctx, state=state))
        found = await system.ask(TRACKER, DiffWrites())

    assert found == WritesFound(writes=Writes.of(modified=[str(kept)]))


async def test_a_deleted_file_is_reported_deleted(tmp_path: Path) -> None:
    state = _state(tmp_path)
    users = tmp_path / "ctx" / "users.txt"
    users.write_text("the user's file\n")
    await _ask(state, TakeBaseline())
    users.unlink()

    tap = await _ask(state, DiffWrites())

    assert state.writes == Writes.of(deleted=[str(users)])
    (event,) = tap.of_type(ContextPathsChanged)
    assert event.files == (PathWrite(path=str(users), kind=WriteKind.DELETED),)


async def test_a_content_change_that_keeps_the_mtime_is_reported(tmp_path: Path) -> None:
    state = _state(tmp_path)
    config = tmp_path / "ctx" / "config.ini"
    config.write_text("debug = false\n")
    await _ask(state, TakeBaseline())
    before = config.stat()
    config.write_text("debug = true!\n")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))

    await _ask(state, DiffWrites())

    assert state.writes == Writes.of(modified=[str(config)])


async def test_a_renamed_file_is_reported_renamed(tmp_path: Path) -> None:
    state = _state(tmp_path)
    old = tmp_path / "ctx" / "old.txt"
    old.write_text("moved\n")
    await _ask(state, TakeBaseline())
    old.rename(tmp_path / "ctx" / "new.txt")

    await _ask(state, DiffWrites())

    assert state.writes == Writes.of(renamed=[(str(old), str(tmp_path / "ctx" / "new.txt"))])


async def test_the_diff_of_every_change_goes_to_the_log_dir(tmp_path: Path) -> None:
    state = _state(tmp_path)
    notes = tmp_path / "ctx" / "notes.txt"
    notes.write_text("one\n")
    await _ask(state, TakeBaseline())
    notes.write_text("two\n")

    tap = await _ask(state, DiffWrites())

    shown = str(notes).lstrip("/")
    assert (tmp_path / "log" / DIFF_FILE).read_text().splitlines()[:2] == [
        f"--- a/{shown}",
        f"+++ b/{shown}",
    ]
    (event,) = tap.of_type(ContextPathsChanged)
    assert event.diff_file == str(tmp_path / "log" / DIFF_FILE)


async def test_the_full_list_goes_to_the_log_dir(tmp_path: Path) -> None:
    state = _state(tmp_path)
    await _ask(state, TakeBaseline())
    for i in range(7):
        (tmp_path / "ctx" / f"f{i}.txt").write_text("x")

    await _ask(state, DiffWrites())

    listed = (tmp_path / "log" / WRITES_FILE).read_text().splitlines()
    assert listed == [f"new\t{tmp_path / 'ctx' / f'f{i}.txt'}" for i in range(7)]


async def test_without_a_baseline_nothing_is_reported(tmp_path: Path) -> None:
    state = _state(tmp_path)
    (tmp_path / "ctx" / "new.txt").write_text("y")

    await _ask(state, DiffWrites())

    assert state.writes is None
    assert state.settle() is None


async def test_protected_paths_are_not_tracked(tmp_path: Path) -> None:
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "keep").mkdir()
    state = _state(tmp_path, protected_paths=["keep"])
    await _ask(state, TakeBaseline())
    (tmp_path / "ctx" / "keep" / "x.txt").write_text("y")

    await _ask(state, DiffWrites())

    assert state.writes == Writes()


def test_a_run_that_ends_before_the_diff_still_reports_its_writes(tmp_path: Path) -> None:
    state = _state(tmp_path)
    state.baseline = state.walk()
    (tmp_path / "ctx" / "late.txt").write_text("written before the timeout")

    assert state.settle() == Writes.of(new=[str(tmp_path / "ctx" / "late.txt")])


async def test_the_runs_own_directories_are_not_the_users_writes(tmp_path: Path) -> None:
    state = _state(tmp_path)
    run = tmp_path / "ctx" / ".conclave"
    run.mkdir()
    state.excluded = (run,)
    await _ask(state, TakeBaseline())
    (run / "events.jsonl").write_text("{}")

    await _ask(state, DiffWrites())

    assert state.writes == Writes()
