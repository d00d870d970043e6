"""One agent's workspace and what its tools may reach: the :class:`~actors.tools.paths.Grants`
its path policy asks at every call.

An agent may always write its own workspace. It may read the snapshot of every answer it
has been shown (:meth:`AgentWorkspace.see`, called wherever answers reach the agent: updates,
snapshots, the presentation request), and no other: with ``ring`` visibility an agent cannot
read the workspaces of answers it was never shown. Context paths are read-only until the
writing phase opens them (:meth:`AgentWorkspace.open_context_writes`); their protected paths
stay read-only throughout.

A context path may contain the run's own directories (``conclave run --context .`` with the
log under ``./.conclave``): those are cut out of its grant, so an agent cannot read the event
log, its peers' workspaces or snapshots it was not shown through the context path.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.prompts.workspace import ContextAccess, ContextNote, WorkspaceNote
from conclave.actors.tools.paths import PathGrant
from conclave.actors.workspace.events import ContextWritesOpened
from conclave.actors.workspace.layout import RunLayout
from conclave.config.schema.context import ContextPath
from conclave.runtime import ActorContext

if TYPE_CHECKING:
    # Importing the sandbox package loads the docker SDK (~0.2 s): a run without tools,
    # which imports this module, never needs it.
    from conclave.actors.sandbox.protocol import Mount, RunDirs, Sandbox

__all__ = ["AgentWorkspace", "ContextGrant", "context_mounts"]


@attrs.frozen(kw_only=True)
class ContextGrant(PathGrant):
    """A context path's grant, minus the run's own directories inside it."""

    excluded: tuple[Path, ...] = ()

    def holds(self, path: str) -> bool:
        if not super().holds(path):
            return False
        return not any(_within(path, str(e)) for e in self.excluded)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def context_mounts(
    context_paths: tuple[ContextPath, ...], *, writes_open: bool
) -> tuple[Mount, ...]:
    """The context paths as a sandbox's mounts: read-only unless writable and
    ``writes_open``; a writable one's protected paths follow it, read-only (a later mount
    covers an earlier one)."""
    from conclave.actors.sandbox.protocol import Mount

    mounts: list[Mount] = []
    for context in context_paths:
        writable = writes_open and context.writable
        mounts.append(Mount(path=context.path, writable=writable))
        if writable:
            mounts.extend(Mount(path=p, writable=False) for p in context.protected if p.exists())
    return tuple(mounts)


class AgentWorkspace:
    """One agent's workspace, the snapshots it may read, and its context paths.

    Owned by the run, not by the agent's incarnation: what the agent was shown survives a
    crash of the actor, and so does what it may read.
    """

    def __init__(
        self,
        *,
        agent: str,
        layout: RunLayout,
        context_paths: tuple[ContextPath, ...],
        excluded: tuple[Path, ...],
        published: dict[str, Path],
        writes_open: bool,
    ) -> None:
        self.agent = agent
        self.layout = layout
        self.path = layout.workspace(agent)
        self.context_paths = context_paths
        self._excluded = excluded
        self._published = published
        """The run's published snapshots, label → path (shared by every agent)."""
        self.writes_open = writes_open
        """Whether writable context paths may be written now."""
        self.readable: dict[str, Path] = {}
        """Snapshots this agent was shown, label → path."""
        self._snapshot_grants: list[PathGrant] = []
        self.sandbox: Sandbox | None = None
        """Where its shell commands run, once the run opened it."""
        self._remounted = writes_open
        """Its sandbox has the writable context paths mounted rw."""
        self.when_writes_open: list[Callable[[], Awaitable[None]]] = []
        """What else shows the context paths and is told when this agent's writes open (its
        confined MCP servers, restarted to see them writable)."""
        self._own = PathGrant(root=self.path, writable=True, label="workspace")
        self._contexts = self._context_grants()
        self._grants: tuple[PathGrant, ...] | None = None
        """Built when asked after a change: answers arrive far more often than tools run."""

    # -- Grants -----------------------------------------------------------------------------

    def grants(self) -> tuple[PathGrant, ...]:
        if self._grants is None:
            self._grants = (self._own, *self._snapshot_grants, *self._contexts)
        return self._grants

    def _context_grants(self) -> tuple[PathGrant, ...]:
        return tuple(
            ContextGrant(
                root=c.path,
                writable=self.writes_open and c.writable,
                writable_later=c.writable and not self.writes_open,
                protected=c.protected,
                label="a context path",
                single_file=not c.path.is_dir(),
                excluded=tuple(e for e in self._excluded if c.path in e.parents),
            )
            for c in self.context_paths
        )

    def run_dirs(self) -> RunDirs:
        """What this agent's sandbox shows of the run's own directories: every answer
        snapshot, read-only (the file tools still read only those the agent was shown); the
        run's directory, the log's, the live workspaces and the staged copies hidden (its own
        workspace, mounted writable by the sandbox, stays)."""
        from conclave.actors.sandbox.protocol import RunDirs

        layout = self.layout
        hidden = dict.fromkeys((*self._excluded, layout.workspaces, layout.staging_root))
        return RunDirs(shared=(layout.snapshots,), hidden=tuple(hidden))

    # -- what the agent is shown ------------------------------------------------------------

    def note(self) -> WorkspaceNote:
        """What the agent's prompt says about its files: its workspace, and each context path
        with what the agent may do there now (its grants, said in words)."""
        return WorkspaceNote(
            workspace=str(self.path),
            context_paths=tuple(
                ContextNote(
                    path=str(c.path),
                    access=self._access(c),
                    protected=tuple(str(p) for p in c.protected) if c.writable else (),
                )
                for c in self.context_paths
            ),
        )

    def _access(self, context: ContextPath) -> ContextAccess:
        if not context.writable:
            return ContextAccess.READ_ONLY
        return ContextAccess.WRITABLE_NOW if self.writes_open else ContextAccess.WRITABLE_LATER

    def see(self, views: tuple[AnswerView, ...]) -> tuple[AnswerView, ...]:
        """Take note of answers shown to the agent: their snapshots become readable, and each
        view says where its snapshot is (``workspace``)."""
        shown: list[AnswerView] = []
        for view in views:
            path = self._published.get(view.label)
            if path is None:
                shown.append(view)
                continue
            if view.label not in self.readable:
                self.readable[view.label] = path
                label = f"snapshot of answer {view.label}"
                self._snapshot_grants.append(PathGrant(root=path, writable=False, label=label))
                self._grants = None
            shown.append(attrs.evolve(view, workspace=str(path)))
        return tuple(shown)

    # -- the writing phases -------------------------------------------------------------------

    async def stage(self) -> None:
        """Copy the workspace to this agent's staging directory, for the coordinator to
        publish if it accepts the answer about to be submitted. In a worker thread; if
        cancelled, the copy completes (or fails) first, and a half copy is never staged."""
        await trio.to_thread.run_sync(self.layout.stage, self.agent)

    async def open_context_writes(self, context: ActorContext) -> None:
        """Let this agent write its writable context paths: its grants first (file tools),
        then its sandbox, remounted with them writable (docker recreates its container),
        then its confined MCP servers (restarted with them writable).
        Does nothing when there are none or they are open already. Raises what the remount
        raises; cancelled, the grants stay open and the next request remounts."""
        writable = tuple(c for c in self.context_paths if c.writable)
        if not writable or self._remounted:
            return
        self.writes_open = True
        self._contexts = self._context_grants()
        self._grants = None
        if self.sandbox is not None:
            await self.sandbox.remount(context_mounts(self.context_paths, writes_open=True))
        for hook in self.when_writes_open:
            await hook()
        self._remounted = True  # only now: a failed remount is tried again by a new request
        context.record(
            ContextWritesOpened(
                at=trio.current_time(),
                agent=self.agent,
                paths=tuple(str(c.path) for c in writable),
            )
        )
