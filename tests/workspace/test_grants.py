"""What an agent's tools may reach: its workspace, the snapshots of answers it was shown,
the context paths (writable only once the writing phase opens them, protected paths never),
and nothing of the run's own directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.sandbox.protocol import Mount, ShellOutcome
from conclave.actors.tools.paths import PathPolicy, PathRefused
from conclave.actors.workspace.grants import context_mounts
from conclave.actors.workspace.layout import RunLayout
from conclave.actors.workspace.workspaces import RunWorkspaces
from conclave.config.schema.context import ContextPath, ContextPermission


def _workspaces(
    tmp_path: Path, *context: ContextPath, writes_open: bool = False, run: Path | None = None
) -> RunWorkspaces:
    layout = RunLayout(run or tmp_path / "run")
    layout.create(["a1", "a2"])
    return RunWorkspaces(
        layout=layout,
        agents=["a1", "a2"],
        context_paths=context,
        excluded=(layout.root,),
        writes_open=writes_open,
    )


def _published(workspaces: RunWorkspaces, agent: str, label: str, text: str) -> Path:
    (workspaces.layout.workspace(agent) / "notes.txt").write_text(text)
    workspaces.layout.stage(agent)
    path = workspaces.publish(agent, label)
    assert path is not None
    return path / "notes.txt"


def _policy(workspaces: RunWorkspaces, agent: str) -> PathPolicy:
    workspace = workspaces.agents[agent]
    return PathPolicy(workspace, cwd=workspace.path)


def _writable(tmp_path: Path, name: str = "ctx", **fields: object) -> ContextPath:
    path = tmp_path / name
    path.mkdir()
    return ContextPath(path=path, permission=ContextPermission.WRITE, **fields)


def test_an_agent_writes_its_own_workspace_and_nothing_of_another(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path)
    policy = _policy(workspaces, "a1")

    assert policy.for_write("notes.txt") == workspaces.layout.workspace("a1") / "notes.txt"
    with pytest.raises(PathRefused):
        policy.for_read(str(workspaces.layout.workspace("a2") / "x.txt"))


def test_the_snapshot_of_an_answer_shown_is_readable_and_read_only(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path)
    notes = _published(workspaces, "a2", "agent2.1", "theirs")
    policy = _policy(workspaces, "a1")

    workspaces.agents["a1"].see((AnswerView(label="agent2.1", content="answer"),))

    assert policy.for_read(str(notes)) == notes
    with pytest.raises(PathRefused, match="read-only"):
        policy.for_write(str(notes))


def test_the_snapshot_of_an_answer_never_shown_is_refused(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path)
    notes = _published(workspaces, "a2", "agent2.1", "theirs")

    with pytest.raises(PathRefused, match="outside the paths you may read"):
        _policy(workspaces, "a1").for_read(str(notes))


def test_a_shown_answer_says_where_its_snapshot_is(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path)
    notes = _published(workspaces, "a2", "agent2.1", "theirs")

    (shown,) = workspaces.agents["a1"].see((AnswerView(label="agent2.1", content="answer"),))

    assert shown.workspace == str(notes.parent)


def test_an_answer_without_a_snapshot_is_shown_without_a_workspace(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path)

    (shown,) = workspaces.agents["a1"].see((AnswerView(label="agent2.1", content="answer"),))

    assert shown.workspace is None


def test_a_context_path_is_read_only_during_coordination(tmp_path: Path) -> None:
    context = _writable(tmp_path)
    workspaces = _workspaces(tmp_path, context)
    policy = _policy(workspaces, "a1")

    assert policy.for_read(str(context.path / "a.txt")) == context.path / "a.txt"
    with pytest.raises(PathRefused, match="read-only"):
        policy.for_write(str(context.path / "a.txt"))


class _RemountingSandbox:
    def __init__(self) -> None:
        self.mounts: list[tuple[Mount, ...]] = []

    async def run_shell(self, command: str, *, cwd: Path, timeout: float) -> ShellOutcome:
        raise AssertionError("not used")

    async def remount(self, mounts: tuple[Mount, ...]) -> None:
        self.mounts.append(mounts)

    async def aclose(self) -> None:
        return None

    def refusal(self) -> str | None:
        return None


class _Context:
    """The one thing opening writes needs of an actor context: somewhere to record."""

    def __init__(self) -> None:
        self.recorded: list[object] = []

    def record(self, event: object) -> None:
        self.recorded.append(event)


async def test_opening_writes_makes_writable_context_paths_writable_and_remounts(
    tmp_path: Path,
) -> None:
    context = _writable(tmp_path)
    workspaces = _workspaces(tmp_path, context)
    workspace = workspaces.agents["a1"]
    sandbox = _RemountingSandbox()
    workspace.sandbox = sandbox

    await workspace.open_context_writes(_Context())  # type: ignore[arg-type]

    assert _policy(workspaces, "a1").for_write(str(context.path / "a.txt"))
    assert sandbox.mounts == [(Mount(path=context.path, writable=True),)]


async def test_opening_writes_twice_remounts_once(tmp_path: Path) -> None:
    workspaces = _workspaces(tmp_path, _writable(tmp_path))
    workspace = workspaces.agents["a1"]
    sandbox = _RemountingSandbox()
    workspace.sandbox = sandbox
    events = _Context()

    await workspace.open_context_writes(events)  # type: ignore[arg-type]
    await workspace.open_context_writes(events)  # type: ignore[arg-type]

    assert len(sandbox.mounts) == 1
    assert len(events.recorded) == 1


def test_a_read_only_context_path_stays_read_only_when_writes_open(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    context = ContextPath(path=tmp_path / "docs")
    workspaces = _workspaces(tmp_path, context, writes_open=True)

    with pytest.raises(PathRefused, match="read-only"):
        _policy(workspaces, "a1").for_write(str(context.path / "a.txt"))


def test_a_protected_path_stays_read_only_when_writes_open(tmp_path: Path) -> None:
    context = _writable(tmp_path, protected_paths=["keep"])
    (context.path / "keep").mkdir()
    workspaces = _workspaces(tmp_path, context, writes_open=True)
    policy = _policy(workspaces, "a1")

    assert policy.for_write(str(context.path / "free.txt"))
    with pytest.raises(PathRefused, match="protected"):
        policy.for_write(str(context.path / "keep" / "a.txt"))


def test_the_runs_own_directory_inside_a_context_path_is_cut_out_of_it(tmp_path: Path) -> None:
    context = _writable(tmp_path)
    workspaces = _workspaces(tmp_path, context, writes_open=True, run=context.path / ".conclave")
    other = _published(workspaces, "a2", "agent2.1", "theirs")
    policy = _policy(workspaces, "a1")

    assert policy.for_write(str(context.path / "mine.txt"))
    for unreachable in (other, workspaces.layout.workspace("a2") / "notes.txt"):
        with pytest.raises(PathRefused):
            policy.for_read(str(unreachable))
    # Its own workspace inside the context path is still its own.
    assert policy.for_write("notes.txt")


def test_sandbox_mounts_are_read_only_until_writes_open(tmp_path: Path) -> None:
    writable = _writable(tmp_path, protected_paths=["keep"])
    (writable.path / "keep").mkdir()
    (tmp_path / "docs").mkdir()
    read_only = ContextPath(path=tmp_path / "docs")

    closed = context_mounts((writable, read_only), writes_open=False)
    opened = context_mounts((writable, read_only), writes_open=True)

    assert closed == (
        Mount(path=writable.path, writable=False),
        Mount(path=read_only.path, writable=False),
    )
    assert opened == (
        Mount(path=writable.path, writable=True),
        Mount(path=writable.path / "keep", writable=False),
        Mount(path=read_only.path, writable=False),
    )


def test_a_writable_file_context_path_grants_that_file_once_writes_open(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("mine\n")
    context = ContextPath(path=notes, permission=ContextPermission.WRITE)
    workspaces = _workspaces(tmp_path, context, writes_open=True)
    policy = _policy(workspaces, "a1")

    assert policy.for_write(str(notes)) == notes.resolve()
    assert policy.is_granted_file(notes.resolve())
    with pytest.raises(PathRefused, match="outside the paths you may write"):
        policy.for_write(str(tmp_path / "beside.md"))


def test_the_root_of_a_directory_context_path_is_still_not_a_file(tmp_path: Path) -> None:
    context = _writable(tmp_path)
    workspaces = _workspaces(tmp_path, context, writes_open=True)

    with pytest.raises(PathRefused, match="is the root of a context path"):
        _policy(workspaces, "a1").for_write(str(context.path))


def test_a_write_to_a_writable_context_path_before_the_presentation_names_the_phase(
    tmp_path: Path,
) -> None:
    context = _writable(tmp_path)
    policy = _policy(_workspaces(tmp_path, context), "a1")

    with pytest.raises(PathRefused) as refused:
        policy.for_write(str(context.path / "a.txt"))

    message = str(refused.value)
    assert f"is in a context path ({context.path}), which is writable only in the final " in (
        message
    )
    assert "presentation: in the answer rounds it is read-only" in message


def test_a_refused_write_names_the_context_path_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    context = ContextPath(path=notes, permission=ContextPermission.READ)
    policy = _policy(_workspaces(tmp_path, context), "a1")

    with pytest.raises(PathRefused) as refused:
        policy.for_write(str(notes / "a.txt"))

    message = str(refused.value)
    assert f"is in a context path ({notes}), which is read-only" in message
    assert f"context path {notes}" not in message
