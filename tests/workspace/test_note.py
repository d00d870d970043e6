"""What an agent's prompt says about its files is what its grants allow: its workspace, each
context path read-only, writable later (in the final presentation) or writable now once the
writing phase opened it, and the protected paths of a writable one."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.prompts.workspace import ContextAccess, ContextNote, WorkspaceNote
from conclave.actors.workspace.layout import RunLayout
from conclave.actors.workspace.workspaces import RunWorkspaces
from conclave.config.schema.context import ContextPath, ContextPermission
from tests.workspace.test_grants import _Context


def _workspaces(tmp_path: Path, *context: ContextPath, writes_open: bool) -> RunWorkspaces:
    layout = RunLayout(tmp_path / "run")
    layout.create(["a1"])
    return RunWorkspaces(
        layout=layout,
        agents=["a1"],
        context_paths=context,
        excluded=(layout.root,),
        writes_open=writes_open,
    )


def _contexts(tmp_path: Path) -> tuple[ContextPath, ContextPath]:
    for name in ("docs", "src", "src/vendor"):
        (tmp_path / name).mkdir()
    docs = ContextPath(path=tmp_path / "docs")
    src = ContextPath(
        path=tmp_path / "src", permission=ContextPermission.WRITE, protected_paths=["vendor"]
    )
    return docs, src


def test_the_note_names_the_agents_own_workspace(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path, writes_open=False)

    note = workspaces.agents["a1"].note()

    assert note == WorkspaceNote(workspace=str(workspaces.layout.workspace("a1")))


def test_writable_context_paths_are_writable_later_while_writes_are_closed(
    tmp_path: Path,
) -> None:
    docs, src = _contexts(tmp_path)

    note = _workspaces(tmp_path, docs, src, writes_open=False).agents["a1"].note()

    assert note.context_paths == (
        ContextNote(path=str(docs.path), access=ContextAccess.READ_ONLY),
        ContextNote(
            path=str(src.path),
            access=ContextAccess.WRITABLE_LATER,
            protected=(str(src.path / "vendor"),),
        ),
    )


def test_writable_context_paths_are_writable_now_when_writing_happens_in_coordination(
    tmp_path: Path,
) -> None:
    docs, src = _contexts(tmp_path)

    note = _workspaces(tmp_path, docs, src, writes_open=True).agents["a1"].note()

    assert [c.access for c in note.context_paths] == [
        ContextAccess.READ_ONLY,
        ContextAccess.WRITABLE_NOW,
    ]


async def test_opening_the_writes_makes_the_note_say_writable_now(tmp_path: Path) -> None:
    docs, src = _contexts(tmp_path)
    workspace = _workspaces(tmp_path, docs, src, writes_open=False).agents["a1"]

    await workspace.open_context_writes(_Context())  # type: ignore[arg-type]

    assert workspace.note().context_paths[1].access is ContextAccess.WRITABLE_NOW
