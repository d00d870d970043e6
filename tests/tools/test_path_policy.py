"""No path escape works: ``..``, absolute paths, symlinks in and out, and a symlink swapped
in between the policy's check and the open (raced deterministically inside the check)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conclave.actors.tools import fs, search
from conclave.actors.tools.executor import AgentTools
from conclave.actors.tools.paths import PathPolicy, PathRefused
from tests.tools.helpers import MutableGrants, call, grant

WRITES: list[tuple[str, dict[str, object]]] = [
    ("write_file", {"content": "pwned"}),
    ("edit_file", {"old": "the secret", "new": "pwned"}),
    ("delete_file", {}),
]


def _unchanged(outside: Path) -> bool:
    return sorted(os.listdir(outside)) == ["secret.txt"] and (
        (outside / "secret.txt").read_text() == "the secret\n"
    )


# spelled escapes


async def test_dot_dot_out_of_the_workspace_is_refused(tools: AgentTools, outside: Path) -> None:
    result = await call(tools, "read_file", path="../outside/secret.txt")
    assert not result.ok
    assert f"which resolves to '{outside / 'secret.txt'}'" in (result.error or "")
    assert "outside the paths you may read: workspace" in (result.error or "")


async def test_dot_dot_that_lands_inside_is_allowed(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hi\n")
    result = await call(tools, "read_file", path=f"../{workspace.name}/a.txt")
    assert result.ok


async def test_an_absolute_path_outside_is_refused(tools: AgentTools, outside: Path) -> None:
    result = await call(tools, "read_file", path=str(outside / "secret.txt"))
    assert not result.ok
    assert "outside the paths you may read" in (result.error or "")


async def test_an_absolute_path_inside_is_allowed(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hi\n")
    result = await call(tools, "read_file", path=str(workspace / "a.txt"))
    assert result.ok


@pytest.mark.parametrize(("tool", "arguments"), WRITES)
async def test_no_write_tool_escapes_with_dot_dot(
    tools: AgentTools, outside: Path, tool: str, arguments: dict[str, object]
) -> None:
    result = await call(tools, tool, path="../outside/secret.txt", **arguments)
    assert not result.ok
    assert "outside the paths you may write" in (result.error or "")
    assert _unchanged(outside)


async def test_a_path_with_a_nul_byte_is_refused(workspace: Path, grants: MutableGrants) -> None:
    with pytest.raises(PathRefused, match="NUL byte"):
        PathPolicy(grants, cwd=workspace).for_read("a\x00b")


# symlinks


async def test_a_symlink_that_lands_inside_is_followed(tools: AgentTools, workspace: Path) -> None:
    (workspace / "real.txt").write_text("real\n")
    os.symlink(workspace / "real.txt", workspace / "link.txt")
    result = await call(tools, "read_file", path="link.txt")
    assert result.output == "     1\treal"


async def test_a_symlink_that_lands_outside_is_refused(
    tools: AgentTools, workspace: Path, outside: Path
) -> None:
    os.symlink(outside / "secret.txt", workspace / "link.txt")
    result = await call(tools, "read_file", path="link.txt")
    assert not result.ok
    assert "secret" not in result.for_model().split("resolves")[0]
    assert "the secret" not in result.for_model()


async def test_a_symlinked_directory_that_lands_outside_is_refused(
    tools: AgentTools, workspace: Path, outside: Path
) -> None:
    os.symlink(outside, workspace / "out")
    result = await call(tools, "list_directory", path="out")
    assert not result.ok


@pytest.mark.parametrize(("tool", "arguments"), WRITES)
async def test_no_write_tool_escapes_through_a_symlink(
    tools: AgentTools, workspace: Path, outside: Path, tool: str, arguments: dict[str, object]
) -> None:
    os.symlink(outside / "secret.txt", workspace / "link.txt")
    result = await call(tools, tool, path="link.txt", **arguments)
    assert not result.ok
    assert _unchanged(outside)


async def test_writing_into_a_symlinked_directory_outside_is_refused(
    tools: AgentTools, workspace: Path, outside: Path
) -> None:
    os.symlink(outside, workspace / "out")
    result = await call(tools, "write_file", path="out/new.txt", content="x")
    assert not result.ok
    assert _unchanged(outside)


# a symlink swapped in after the check


def _swap_after_check(
    monkeypatch: pytest.MonkeyPatch, method: str, swap: Callable[[], None]
) -> None:
    """Run ``swap`` right after the policy approved a path: the window a concurrent shell
    command would have to win."""
    original = getattr(PathPolicy, method)

    def checked_then_swapped(self: PathPolicy, path: str) -> Path:
        resolved: Path = original(self, path)
        swap()
        return resolved

    monkeypatch.setattr(PathPolicy, method, checked_then_swapped)


def _file_to_link(path: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        path.unlink()
        os.symlink(target, path)

    return swap


def _dir_to_link(path: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        shutil.rmtree(path)
        os.symlink(target, path)

    return swap


async def test_a_file_swapped_for_a_symlink_after_the_check_is_not_read(
    tools: AgentTools, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "a.txt").write_text("harmless\n")
    _swap_after_check(
        monkeypatch, "for_read", _file_to_link(workspace / "a.txt", outside / "secret.txt")
    )
    result = await call(tools, "read_file", path="a.txt")
    assert not result.ok
    assert "became a symbolic link after it was checked" in (result.error or "")
    assert "the secret" not in result.for_model()


async def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_read(
    tools: AgentTools, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "secret.txt").write_text("harmless\n")
    _swap_after_check(monkeypatch, "for_read", _dir_to_link(workspace / "sub", outside))
    result = await call(tools, "read_file", path="sub/secret.txt")
    assert not result.ok
    assert "changed while it was being opened" in (result.error or "")
    assert "the secret" not in result.for_model()


async def test_a_swap_is_caught_by_fstat_where_proc_is_absent(
    tools: AgentTools, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs, "_HAS_PROC", False)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "secret.txt").write_text("harmless\n")
    _swap_after_check(monkeypatch, "for_read", _dir_to_link(workspace / "sub", outside))
    result = await call(tools, "read_file", path="sub/secret.txt")
    assert not result.ok
    assert "the secret" not in result.for_model()


async def test_a_directory_swapped_after_the_check_gets_no_new_file(
    tools: AgentTools, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "sub").mkdir()
    _swap_after_check(monkeypatch, "for_write", _dir_to_link(workspace / "sub", outside))
    result = await call(tools, "write_file", path="sub/new.txt", content="pwned")
    assert not result.ok
    assert _unchanged(outside)


@pytest.mark.parametrize(("tool", "arguments"), WRITES)
async def test_a_file_swapped_for_a_symlink_after_the_check_is_not_written(
    tools: AgentTools,
    workspace: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    arguments: dict[str, object],
) -> None:
    (workspace / "a.txt").write_text("the secret\n")
    _swap_after_check(
        monkeypatch, "for_write", _file_to_link(workspace / "a.txt", outside / "secret.txt")
    )
    result = await call(tools, tool, path="a.txt", **arguments)
    assert not result.ok
    assert "symbolic link" in (result.error or "")
    assert _unchanged(outside)


# grants


async def test_a_read_only_grant_can_be_read_but_not_written(
    tools: AgentTools, grants: MutableGrants, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snapshots" / "agent2.1"
    snapshot.mkdir(parents=True)
    (snapshot / "a.txt").write_text("theirs\n")
    grants.items.append(grant(snapshot, writable=False, label="snapshot agent2.1"))
    assert (await call(tools, "read_file", path=str(snapshot / "a.txt"))).ok
    result = await call(tools, "write_file", path=str(snapshot / "a.txt"), content="mine")
    assert not result.ok
    assert f"is in snapshot agent2.1 ({snapshot.resolve()}), which is read-only" in (
        result.error or ""
    )
    assert (snapshot / "a.txt").read_text() == "theirs\n"


async def test_grants_are_asked_at_every_call(
    tools: AgentTools, grants: MutableGrants, outside: Path
) -> None:
    assert not (await call(tools, "read_file", path=str(outside / "secret.txt"))).ok
    grants.items.append(grant(outside, writable=False, label="snapshot agent2.1"))
    assert (await call(tools, "read_file", path=str(outside / "secret.txt"))).ok


async def test_a_protected_path_inside_a_writable_grant_stays_read_only(
    tools: AgentTools, grants: MutableGrants, tmp_path: Path
) -> None:
    context = tmp_path / "project"
    (context / "keep").mkdir(parents=True)
    (context / "keep" / "a.txt").write_text("kept\n")
    grants.items.append(
        grant(context, writable=True, label=f"context {context}", protected=(context / "keep",))
    )
    assert (await call(tools, "read_file", path=str(context / "keep" / "a.txt"))).ok
    result = await call(tools, "delete_file", path=str(context / "keep" / "a.txt"))
    assert not result.ok
    assert "is a protected path" in (result.error or "")
    assert (await call(tools, "write_file", path=str(context / "b.txt"), content="x")).ok


async def test_the_most_specific_grant_decides(
    tools: AgentTools, grants: MutableGrants, tmp_path: Path
) -> None:
    context = tmp_path / "project"
    snapshot = context / "snap"
    snapshot.mkdir(parents=True)
    grants.items.append(grant(context, writable=True, label="context"))
    grants.items.append(grant(snapshot, writable=False, label="snapshot"))
    assert not (await call(tools, "write_file", path=str(snapshot / "a"), content="x")).ok
    assert (await call(tools, "write_file", path=str(context / "a"), content="x")).ok


async def test_the_root_of_a_grant_cannot_be_written(
    workspace: Path, grants: MutableGrants
) -> None:
    with pytest.raises(PathRefused, match="is the root of workspace"):
        PathPolicy(grants, cwd=workspace).for_write(".")


async def test_a_refusal_names_the_paths_that_are_allowed(
    tools: AgentTools, grants: MutableGrants, workspace: Path, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snap"
    snapshot.mkdir()
    grants.items.append(grant(snapshot, writable=False, label="snapshot agent2.1"))
    read = await call(tools, "read_file", path="/etc/hostname")
    assert f"workspace ({workspace}), snapshot agent2.1 ({snapshot.resolve()})" in (
        read.error or ""
    )
    write = await call(tools, "write_file", path="/etc/hostname", content="x")
    assert f"you may write: workspace ({workspace}). " in (write.error or "")


async def test_a_file_swapped_for_a_symlink_after_the_walk_is_not_searched(
    tools: AgentTools, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "a.txt").write_text("harmless\n")
    listed = search.walk

    def walk_then_swap(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for found in listed(*args, **kwargs):
            _file_to_link(found.path, outside / "secret.txt")()
            yield found

    monkeypatch.setattr(search, "walk", walk_then_swap)
    result = await call(tools, "search", pattern="secret")
    assert result.output.startswith("no matches")
