"""A single file granted writable (a context path ``FILE:w``) is written, edited and deleted
by the file tools, in place so that a sandbox's bind mount of it sees the change; nothing
else next to it is granted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conclave.actors.tools.executor import AgentTools
from conclave.actors.tools.paths import PathGrant
from tests.tools.helpers import MutableGrants, call


def _text(path: Path) -> str:
    return path.read_text()


def _exists(path: Path) -> bool:
    return path.exists()


@pytest.fixture
def granted(tmp_path: Path, grants: MutableGrants) -> Path:
    """``notes.txt`` granted writable, alone, in a directory the agent may not touch."""
    folder = tmp_path / "user"
    folder.mkdir()
    path = (folder / "notes.txt").resolve()
    path.write_text("one\ntwo\n")
    (folder / "other.txt").write_text("theirs\n")
    grants.items.append(
        PathGrant(root=path, writable=True, single_file=True, label=f"context path {path}")
    )
    return path


async def test_write_file_replaces_a_granted_file(tools: AgentTools, granted: Path) -> None:
    result = await call(tools, "write_file", path=str(granted), content="new\n")
    assert result.ok, result.error
    assert _text(granted) == "new\n"


async def test_edit_file_edits_a_granted_file(tools: AgentTools, granted: Path) -> None:
    result = await call(tools, "edit_file", path=str(granted), old="two", new="2")
    assert result.ok, result.error
    assert _text(granted) == "one\n2\n"


async def test_delete_file_deletes_a_granted_file(tools: AgentTools, granted: Path) -> None:
    result = await call(tools, "delete_file", path=str(granted))
    assert result.ok, result.error
    assert not _exists(granted)


async def test_a_deleted_granted_file_can_be_written_again(
    tools: AgentTools, granted: Path
) -> None:
    assert (await call(tools, "delete_file", path=str(granted))).ok
    result = await call(tools, "write_file", path=str(granted), content="back\n")
    assert result.ok, result.error
    assert _text(granted) == "back\n"


async def test_a_granted_file_keeps_its_inode_so_mounts_of_it_see_the_write(
    tools: AgentTools, granted: Path
) -> None:
    inode = os.stat(granted).st_ino
    assert (await call(tools, "write_file", path=str(granted), content="x" * 3)).ok
    assert (await call(tools, "edit_file", path=str(granted), old="xxx", new="y")).ok
    assert os.stat(granted).st_ino == inode
    assert _text(granted) == "y"


async def test_writing_a_granted_file_creates_nothing_next_to_it(
    tools: AgentTools, granted: Path
) -> None:
    assert (await call(tools, "write_file", path=str(granted), content="new\n")).ok
    assert sorted(p.name for p in granted.parent.iterdir()) == ["notes.txt", "other.txt"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("write_file", {"content": "pwned"}),
        ("edit_file", {"old": "theirs", "new": "pwned"}),
        ("delete_file", {}),
    ],
)
async def test_a_file_next_to_a_granted_file_stays_refused(
    tools: AgentTools, granted: Path, tool: str, arguments: dict[str, object]
) -> None:
    other = granted.parent / "other.txt"
    result = await call(tools, tool, path=str(other), **arguments)
    assert not result.ok
    assert "outside the paths you may write" in (result.error or "")
    assert other.read_text() == "theirs\n"


async def test_a_read_only_granted_file_is_not_written(
    tools: AgentTools, grants: MutableGrants, granted: Path
) -> None:
    grants.items[-1] = PathGrant(root=granted, writable=False, single_file=True, label="ctx")
    result = await call(tools, "write_file", path=str(granted), content="pwned")
    assert not result.ok
    assert "read-only" in (result.error or "")
    assert _text(granted) == "one\ntwo\n"


async def test_a_protected_granted_file_is_not_written(
    tools: AgentTools, grants: MutableGrants, granted: Path
) -> None:
    grants.items[-1] = PathGrant(
        root=granted, writable=True, single_file=True, protected=(granted,), label="ctx"
    )
    result = await call(tools, "delete_file", path=str(granted))
    assert not result.ok
    assert "protected path" in (result.error or "")
    assert _exists(granted)


async def test_a_granted_file_swapped_for_a_symlink_is_not_followed(
    tools: AgentTools, granted: Path, outside: Path
) -> None:
    os.unlink(granted)
    os.symlink(outside / "secret.txt", granted)
    result = await call(tools, "write_file", path=str(granted), content="pwned")
    assert not result.ok
    assert _text(outside / "secret.txt") == "the secret\n"
